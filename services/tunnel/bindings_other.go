//go:build !linux

package tunnel

func socketOwners([]uint64) map[uint64]owner { return nil }
