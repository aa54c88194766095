package catalog

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	_ "embed"
)

// Snapshot is a catalog read at one time from one place.
type Snapshot struct {
	// Date is the RFC 3339 date (UTC) the data was read, e.g. "2026-11-30".
	Date string `json:"date"`
	// Origin says where the data was read, e.g.
	// "DescribeInstanceTypes+DescribeInstanceTypeOfferings+DescribeAvailabilityZones via moto 5.2.1 (endpoint http://127.0.0.1:PORT)".
	Origin string `json:"origin"`
	// Types are the instance types with SSD instance storage, sorted by name.
	Types []InstanceType `json:"types"`
	// Regions are sorted by name.
	Regions []Region `json:"regions"`
}

// Region returns the region called name.
func (s *Snapshot) Region(name string) (Region, bool) {
	for _, r := range s.Regions {
		if r.Name == name {
			return r, true
		}
	}
	return Region{}, false
}

// RegionNames returns the names of the snapshot's regions, sorted.
func (s *Snapshot) RegionNames() []string {
	names := make([]string, len(s.Regions))
	for i, r := range s.Regions {
		names[i] = r.Name
	}
	slices.Sort(names)
	return names
}

//go:embed snapshot.json.gz
var embeddedSnapshot []byte

var (
	embeddedOnce sync.Once
	embedded     *Snapshot
	embeddedErr  error
)

// Embedded returns the snapshot compiled into the binary, parsed once.
// Every caller gets the same value: treat it as read-only.
func Embedded() (*Snapshot, error) {
	embeddedOnce.Do(func() {
		embedded, embeddedErr = Decode(embeddedSnapshot)
		if embeddedErr != nil {
			embeddedErr = fmt.Errorf("reading the embedded instance type catalog (a provider bug; regenerate it with go generate ./internal/catalog): %w", embeddedErr)
		}
	})
	return embedded, embeddedErr
}

// Encode returns s as gzip-compressed, indented JSON. The output depends only
// on the content of s: types, regions, zones, architectures and zone lists are
// written sorted, and the gzip header carries no name or time. s is not
// modified.
func Encode(s *Snapshot) ([]byte, error) {
	if s == nil {
		return nil, errors.New("encoding the instance type catalog: snapshot is nil")
	}
	n := normalized(s)
	if err := n.check(); err != nil {
		return nil, fmt.Errorf("encoding the instance type catalog: %w", err)
	}
	js, err := json.MarshalIndent(n, "", " ")
	if err != nil {
		return nil, fmt.Errorf("encoding the instance type catalog: %w", err)
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, fmt.Errorf("compressing the instance type catalog: %w", err)
	}
	// The zero gzip.Header has no name, no comment and ModTime zero.
	if _, err := zw.Write(append(js, '\n')); err != nil {
		return nil, fmt.Errorf("compressing the instance type catalog: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compressing the instance type catalog: %w", err)
	}
	return buf.Bytes(), nil
}

// maxDecoded bounds the decompressed size Decode accepts.
const maxDecoded = 64 << 20

// Decode parses what [Encode] wrote. Unknown JSON fields, duplicate type or
// region names and a type without a name are errors.
func Decode(b []byte) (*Snapshot, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("decompressing the instance type catalog: %w", err)
	}
	js, err := io.ReadAll(io.LimitReader(zr, maxDecoded+1))
	if err != nil {
		return nil, fmt.Errorf("decompressing the instance type catalog: %w", err)
	}
	if len(js) > maxDecoded {
		return nil, fmt.Errorf("decompressing the instance type catalog: larger than %d bytes", maxDecoded)
	}
	if err := zr.Close(); err != nil {
		return nil, fmt.Errorf("decompressing the instance type catalog: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	var s Snapshot
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("parsing the instance type catalog: %w", err)
	}
	if dec.More() {
		return nil, errors.New("parsing the instance type catalog: data after the JSON document")
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("parsing the instance type catalog: %w", err)
	}
	n := normalized(&s)
	return &n, nil
}

// normalized returns a deep copy of s with every list sorted.
func normalized(s *Snapshot) Snapshot {
	n := Snapshot{Date: s.Date, Origin: s.Origin}
	n.Types = make([]InstanceType, len(s.Types))
	for i, t := range s.Types {
		t = t.clone()
		slices.Sort(t.Architectures)
		if t.Architectures == nil {
			t.Architectures = []string{}
		}
		n.Types[i] = t
	}
	slices.SortFunc(n.Types, func(a, b InstanceType) int { return strings.Compare(a.Name, b.Name) })
	n.Regions = make([]Region, len(s.Regions))
	for i, r := range s.Regions {
		c := Region{Name: r.Name, Zones: slices.Clone(r.Zones), Offerings: make(map[string][]string, len(r.Offerings))}
		if c.Zones == nil {
			c.Zones = []Zone{}
		}
		slices.SortFunc(c.Zones, func(a, b Zone) int { return strings.Compare(a.ID, b.ID) })
		for name, ids := range r.Offerings {
			ids = slices.Clone(ids)
			slices.Sort(ids)
			c.Offerings[name] = ids
		}
		n.Regions[i] = c
	}
	slices.SortFunc(n.Regions, func(a, b Region) int { return strings.Compare(a.Name, b.Name) })
	return n
}

// check reports content no catalog may have.
func (s *Snapshot) check() error {
	types := make(map[string]bool, len(s.Types))
	for _, t := range s.Types {
		if t.Name == "" {
			return errors.New("an instance type has no name")
		}
		if types[t.Name] {
			return fmt.Errorf("instance type %s is listed twice", t.Name)
		}
		types[t.Name] = true
	}
	regions := make(map[string]bool, len(s.Regions))
	for _, r := range s.Regions {
		if r.Name == "" {
			return errors.New("a region has no name")
		}
		if regions[r.Name] {
			return fmt.Errorf("region %s is listed twice", r.Name)
		}
		regions[r.Name] = true
		ids := make(map[string]bool, len(r.Zones))
		names := make(map[string]bool, len(r.Zones))
		for _, z := range r.Zones {
			if z.ID == "" || z.Name == "" {
				return fmt.Errorf("region %s has a zone without a name or ID", r.Name)
			}
			if ids[z.ID] || names[z.Name] {
				return fmt.Errorf("region %s lists zone %s (%s) twice", r.Name, z.Name, z.ID)
			}
			ids[z.ID], names[z.Name] = true, true
		}
	}
	return nil
}
