package storetest

import "testing"

// Run runs the contract suite.
func Run(t *testing.T, open Opener) {
	for _, c := range []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"GetPutDelete", testGetPutDelete},
		{"RawValues", testRawValues},
		{"GetMany", testGetMany},
		{"GetManyLarge", testGetManyLarge},
		{"GetManyReadsOwnWrites", testGetManyOwnWrites},
		{"BadKeys", testBadKeys},
		{"ByteOrder", testByteOrder},
		{"Scan", testScan},
		{"ScanPages", testScanPages},
		{"ScanStopAndErrors", testScanStop},
		{"WritesDuringScan", testWritesDuringScan},
		{"Counts", testCounts},
		{"Rollback", testRollback},
		{"ReadOnly", testReadOnly},
		{"Sequences", testSequences},
		{"BucketsAndSetSeq", testBucketsAndSetSeq},
		{"ConcurrentSequences", testConcurrentSequences},
		{"ConcurrentCounter", testConcurrentCounter},
		{"LockingCounter", testLockingCounter},
		{"AfterCommit", testAfterCommit},
		{"Notifications", testNotifications},
		{"SlowSubscriber", testSlowSubscriber},
		{"Canceled", testCanceled},
		{"TablePage", testTablePage},
		{"TableIndexUpkeep", testTableIndexUpkeep},
		{"TableUnique", testTableUnique},
		{"TableCursorUnderInserts", testTableCursorUnderInserts},
		{"TableQueryErrors", testTableQueryErrors},
		{"TableDeclareMigrates", testTableDeclareMigrates},
		{"TableDeclaredTwiceDiffers", testTableDeclaredTwiceDiffers},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, open)
		})
	}
}
