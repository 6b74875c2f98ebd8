package tunnel

// DialAddress is dialAddress, for the tests.
var DialAddress = dialAddress
