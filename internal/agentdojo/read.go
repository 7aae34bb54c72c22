package agentdojo

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// MaxRunBytes bounds one run's JSON: a line or file larger than this is
// refused with an error rather than read into memory. AgentDojo's largest
// runs are a few hundred KiB.
const MaxRunBytes = 32 << 20

// Item is one run's JSON as read, not yet parsed.
type Item struct {
	// Source is the file, and for a JSON Lines file ":line".
	Source string
	Data   []byte
}

// Read calls fn with every run in paths, in order: a file ending in .json
// is one run (AgentDojo's runs/<pipeline>/<suite>/<user_task>/<attack>/
// <task>.json), one ending in .jsonl or .jsonl.gz one run a line; a
// directory is walked in lexical order for such files, others in it
// skipped. A file named explicitly must be one of these kinds. Read stops
// at the first error (fn's, or a file that cannot be read) or when ctx
// ends.
func Read(ctx context.Context, paths []string, fn func(Item) error) error {
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if !st.IsDir() {
			if kindOf(p) == "" {
				return fmt.Errorf("%s: not a run file (want .json, .jsonl or .jsonl.gz)", p)
			}
			if err := readFile(ctx, p, fn); err != nil {
				return err
			}
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || kindOf(path) == "" {
				return nil
			}
			return readFile(ctx, path, fn)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// kindOf is how a file holds runs: "json" (one), "jsonl" or "jsonl.gz"
// (one a line), or "" (no runs).
func kindOf(path string) string {
	switch {
	case strings.HasSuffix(path, ".jsonl.gz"):
		return "jsonl.gz"
	case strings.HasSuffix(path, ".jsonl"):
		return "jsonl"
	case strings.HasSuffix(path, ".json"):
		return "json"
	}
	return ""
}

func readFile(ctx context.Context, path string, fn func(Item) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	switch kindOf(path) {
	case "json":
		data, err := io.ReadAll(io.LimitReader(f, MaxRunBytes+1))
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(data) > MaxRunBytes {
			return fmt.Errorf("%s: larger than %d bytes", path, MaxRunBytes)
		}
		return fn(Item{Source: path, Data: data})
	case "jsonl.gz":
		zr, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		defer zr.Close()
		return ReadLines(ctx, path, zr, fn)
	}
	return ReadLines(ctx, path, f, fn)
}

// ReadLines calls fn with each non-blank line of r, a JSON Lines stream
// named name.
func ReadLines(ctx context.Context, name string, r io.Reader, fn func(Item) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	for line := 1; ; line++ {
		if line%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		data, err := readLine(br)
		if len(bytes.TrimSpace(data)) > 0 {
			if ferr := fn(Item{Source: fmt.Sprintf("%s:%d", name, line), Data: data}); ferr != nil {
				return ferr
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, errLineTooLong):
			return fmt.Errorf("%s:%d: %w", name, line, err)
		case err != nil:
			return fmt.Errorf("%s: %w", name, err)
		}
	}
}

var errLineTooLong = fmt.Errorf("line longer than %d bytes", MaxRunBytes)

// readLine reads one line without its newline; at the end of the stream
// it returns what is left and io.EOF.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > MaxRunBytes {
			return nil, errLineTooLong
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return line, err
		}
	}
}
