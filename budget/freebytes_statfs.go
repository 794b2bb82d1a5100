//go:build linux || darwin || freebsd

package budget

import (
	"path/filepath"
	"syscall"
)

// FreeBytes is the space free to an unprivileged writer on the filesystem
// that holds path's directory, or 0 where it cannot be told (stdout).
func FreeBytes(path string) int64 {
	if path == "" || path == "-" {
		return 0
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(filepath.Dir(path), &st); err != nil {
		return 0
	}
	return ClampMul(int64(st.Bavail), int64(st.Bsize))
}
