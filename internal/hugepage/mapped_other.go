//go:build !linux

package hugepage

func mapped[T any](n int, populate bool) []T { return Make[T](n) }

func unmap[T any](s []T) {}
