package storetest

// The contract's own table and records, for the test of RunTables.
var (
	ContractTable = tableOf
	TableRecords  = tableRecords
)
