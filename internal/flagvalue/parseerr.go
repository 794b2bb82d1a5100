package flagvalue

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"moebench/internal/report"
)

// ParseError is the flag parser's error with what it echoes of the
// command line quoted bounded (report.Quote): a bad value, and the
// number parser's own echo of it, or an unknown flag's name. A command
// line can carry a value of any length; an error line should not.
func ParseError(err error) error {
	var bad *pflag.InvalidValueError
	var unknown *pflag.NotExistError
	switch {
	case errors.As(err, &bad):
		v, cause := bad.GetValue(), bad.Unwrap().Error()
		var num *strconv.NumError
		if errors.As(bad.Unwrap(), &num) {
			switch {
			case errors.Is(num.Err, strconv.ErrRange):
				cause = "out of range"
			case strings.Contains(num.Func, "Float"):
				cause = "not a number"
			default:
				cause = "not a whole number"
			}
		}
		cause = strings.ReplaceAll(cause, strconv.Quote(v), report.Quote(v))
		return fmt.Errorf("invalid argument %s for \"--%s\" flag: %s", report.Quote(v), bad.GetFlag().Name, cause)
	case errors.As(err, &unknown) && len(unknown.GetSpecifiedName()) > report.MaxQuoted:
		return fmt.Errorf("unknown flag %s", report.Quote("--"+unknown.GetSpecifiedName()))
	}
	return err
}
