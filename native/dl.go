//go:build cgo

package native

// A minimal dlopen wrapper: the library is found and bound at run time so
// that moebench builds and runs on machines without CUDA.

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

type dynLib struct {
	path   string
	handle unsafe.Pointer
}

// dlerror's message is the calling thread's: each call that may fail
// locks the goroutine to its thread until it has read the message, or
// another goroutine's dl call on that thread could replace or clear it.

func dlOpen(path string) (*dynLib, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cs := C.CString(path)
	defer C.free(unsafe.Pointer(cs))
	h := C.dlopen(cs, C.RTLD_NOW|C.RTLD_LOCAL)
	if h == nil {
		return nil, errors.New(dlError())
	}
	return &dynLib{path: path, handle: h}, nil
}

func (d *dynLib) sym(name string) (unsafe.Pointer, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	C.dlerror()
	p := C.dlsym(d.handle, cs)
	if p == nil {
		return nil, fmt.Errorf("%s: symbol %s: %s", d.path, name, dlError())
	}
	return p, nil
}

func (d *dynLib) close() error {
	if d.handle == nil {
		return nil
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if C.dlclose(d.handle) != 0 {
		return fmt.Errorf("%s: dlclose: %s", d.path, dlError())
	}
	d.handle = nil
	return nil
}

func dlError() string {
	if e := C.dlerror(); e != nil {
		return C.GoString(e)
	}
	return "unknown dl error"
}
