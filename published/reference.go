package published

import (
	"bytes"
	"errors"
	"strings"

	"moebench/internal/field"
	"moebench/internal/report"
	"moebench/native"
	"moebench/profile"
)

// Against is the kind of reference validate lines the model up against.
type Against int

const (
	// AgainstPaper is the paper's measurements, for its microbenchmarks.
	AgainstPaper Against = iota
	// AgainstMeasured is this machine's measurement (Reference.Data).
	AgainstMeasured
	// AgainstSuite is a published suite's rows, or a user's runs of its
	// tests.
	AgainstSuite
)

// Reference is the reference a validation asks for (Choose): its kind,
// and the suite or the measurement and the file it came from.
type Reference struct {
	Kind  Against
	Suite Suite
	Data  []byte
	From  string
}

// Choose's refusals. ErrAgainst is the against field's; ErrEmpty, a field
// error of measured naming the file. ErrRunsFile is a measurement file
// holding runs of a suite's tests, which go with the suite.
var (
	ErrAgainst       = errors.New("want paper, measured, auto or a published suite")
	ErrSuiteOnly     = errors.New("a suite runs its own rows, or a user's runs, not selected experiments")
	ErrEmpty         = errors.New("the file is empty")
	ErrRunsFile      = errors.New("the file holds runs of a suite's tests")
	ErrNoMeasurement = errors.New("no measurement to validate against")
)

// Choose picks the reference of a validation: against is "paper",
// "measured", "auto" (measured where there is a measurement, else the
// paper) or a suite's name; only says experiments were selected, which a
// suite refuses (ErrSuiteOnly). Against anything but a suite, the
// measurement is the file at measured, read here, where one is named, or
// else the calibration p carries.
func Choose(against string, only bool, measured string, p *profile.Profile) (Reference, error) {
	switch against {
	case "auto", "paper", "measured":
	default:
		suite, err := Get(against)
		if err != nil {
			var names []string
			for _, s := range Suites() {
				names = append(names, s.Name)
			}
			return Reference{}, field.Valuef("against", report.Quote(against), "%w (%s)", ErrAgainst, strings.Join(names, ", "))
		}
		ref := Reference{Kind: AgainstSuite, Suite: suite}
		if only {
			return ref, ErrSuiteOnly
		}
		return ref, nil
	}
	data, from := p.Measured()
	if measured != "" {
		var err error
		if data, err = native.ReadRaw(measured); err != nil {
			return Reference{}, field.Errorf("measured", "%w", err)
		}
		if len(bytes.TrimSpace(data)) == 0 {
			return Reference{}, field.Valuef("measured", measured, "%w", ErrEmpty)
		}
		if LooksLikeRuns(data) {
			return Reference{}, ErrRunsFile
		}
		from = measured
	}
	switch {
	case against == "measured" && len(data) == 0:
		return Reference{}, ErrNoMeasurement
	case against == "measured" || against == "auto" && len(data) > 0:
		return Reference{Kind: AgainstMeasured, Data: data, From: from}, nil
	}
	return Reference{Kind: AgainstPaper}, nil
}
