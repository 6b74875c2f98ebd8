package consolee2e_test

import (
	"testing"

	"deckhand/control/controltest"
)

func TestMain(m *testing.M) { controltest.Main(m) }
