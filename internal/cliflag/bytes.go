package cliflag

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Bytes is a flag.Value holding a size in bytes, written as a whole number
// with an optional unit: binary KiB, MiB, GiB, TiB (powers of 1024) or
// decimal KB, MB, GB, TB (powers of 1000), B or none for bytes. Units are
// case-insensitive and may follow a space: "512MiB", "10 GiB", "1048576".
// Bare K, M, G, T are refused, since tools disagree on what they mean.
type Bytes int64

var byteUnits = map[string]int64{
	"": 1, "b": 1,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
}

// binaryUnits are the units String writes, largest first.
var binaryUnits = []struct {
	name string
	size int64
}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}

// ParseBytes reads a size as Bytes.Set does.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("size %q: want a whole number of bytes with an optional unit (e.g. 512MiB, 10GiB)", s)
	}
	unit := strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := byteUnits[unit]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q (want B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)", s, t[i:])
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q: %w", s, errTooLarge)
	}
	return n * mult, nil
}

var errTooLarge = errors.New("too large")

// Set parses a size.
func (b *Bytes) Set(s string) error {
	n, err := ParseBytes(s)
	if err != nil {
		return err
	}
	*b = Bytes(n)
	return nil
}

// String writes the size in the largest binary unit that divides it
// exactly, so that it reads back as the same value.
func (b *Bytes) String() string {
	if b == nil || *b == 0 {
		return "0"
	}
	n := int64(*b)
	for _, u := range binaryUnits {
		if n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}
