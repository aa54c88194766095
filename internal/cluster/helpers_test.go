package cluster_test

import "errors"

var errPlain = errors.New("plain")

func joinErrs(errs ...error) error { return errors.Join(errs...) }
