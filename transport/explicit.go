package transport

// Explicit is implemented by mechanisms that run only where a user names
// them or their presets: a platform's own transport, such as EFA's, which
// other platforms' NICs do not speak. "all" leaves them out.
type Explicit interface {
	Explicit() bool
}

// InAll reports whether "all" takes the mechanism named name: any
// registered one that is not Explicit, and any name not registered (for
// the caller to refuse by name).
func InAll(name string) bool {
	m, err := Lookup(name)
	if err != nil {
		return true
	}
	e, ok := m.(Explicit)
	return !ok || !e.Explicit()
}
