package docker

// SetBeforeCreate sets a function run just before each engine create.
func SetBeforeCreate(f func()) { beforeCreate = f }
