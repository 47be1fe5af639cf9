package crawlspec

import "testing"

func TestKeepsMatchesATypeOrItsWildcard(t *testing.T) {
	keep := []string{"application/pdf", "image/*"}
	for mt, want := range map[string]bool{"application/pdf": true, "image/png": true, "image/svg+xml": true,
		"application/json": false, "text/plain": false, "imagex/png": false} {
		if got := Keeps(keep, mt); got != want {
			t.Errorf("Keeps(%v, %s) = %v, want %v", keep, mt, got, want)
		}
	}
}
