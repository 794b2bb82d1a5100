package transport

import (
	"moebench/fault"
	"moebench/hw"
)

// ApplyFaults applies env.Faults to a fabric a transport built (after
// Place, before the first post) with the profile's recovery constants and
// resets more QP resets by the software that owns its RC queues (a host
// proxy's; 0 for queues a GPU kernel drives). A queue that gives up is
// reported to env.Fail as mechanism's. It does nothing on a healthy
// fabric.
func ApplyFaults(env *Env, fab *hw.Fabric, mechanism string, resets int) {
	if env.Faults.Empty() {
		return
	}
	rec := hw.NewRecovery(env.Profile)
	rec.Resets = resets
	fab.SetFaults(env.Faults, rec, func(f *fault.Failure) {
		f.Mechanism = mechanism
		if env.Fail != nil {
			env.Fail(f)
		}
	})
}
