package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// Writers and a reader at once: -race reports a buffer left unguarded, and
// every line written must be there at the end.
func TestConcurrentWritesAndReads(t *testing.T) {
	const writers, lines = 8, 200
	var b Buffer
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range lines {
				if _, err := b.Write([]byte("line\n")); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range lines {
			if n := strings.Count(b.String(), "line\n"); n > writers*lines {
				t.Errorf("read %d lines, more than were written", n)
				return
			}
		}
	})
	wg.Wait()
	if n := strings.Count(b.String(), "line\n"); n != writers*lines || len(b.String()) != writers*lines*len("line\n") {
		t.Fatalf("%d lines, %d bytes, want %d lines", n, len(b.String()), writers*lines)
	}
}
