package crawlstack

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// CheckBootstraps reports each function whose DistDir/<fn>/bootstrap is
// missing or not a regular file, so a synth without built functions fails
// with a hint instead of CDK's bare "Cannot find asset".
func (c Config) CheckBootstraps() error {
	var errs []error
	fns := c.pipelineFunctions()
	if c.slowLane() {
		fns = append(fns, FnFetchSlow)
	}
	for _, fn := range fns {
		p := filepath.Join(c.DistDir, fn, "bootstrap")
		fi, err := os.Stat(p)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("function %s: %w (run `make build` at the repository root)", fn, err))
		case !fi.Mode().IsRegular():
			errs = append(errs, fmt.Errorf("function %s: %s is not a file", fn, p))
		}
	}
	if c.Render {
		p := filepath.Join(c.DistDir, FnRender, renderImageFile)
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			errs = append(errs, fmt.Errorf("function %s: no %s to build its image from (run `make build` at the repository root)", FnRender, p))
		}
	}
	return errors.Join(errs...)
}
