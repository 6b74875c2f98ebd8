package procnet

// The two ways Owner reads, for the tests.
var (
	OwnerDiag = ownerDiag
	OwnerScan = ownerScan
	Scan      = scan
)
