package binlog

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadEvents: any input reads without panic; events come in order,
// each starting where the last ended, and a torn tail is a TornError at
// the offset of the event it cuts.
func FuzzReadEvents(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join("testdata", "archive", "binlog.000005.partial")); err == nil {
		f.Add(data[:min(len(data), 4096)])
	}
	f.Add(append(append([]byte(nil), Magic...), make([]byte, 19)...))
	f.Add([]byte("\xfebin\x00\x00\x00\x00\x0f\x01\x00\x00\x00\xff\xff\xff\x7f"))
	f.Fuzz(func(t *testing.T, data []byte) {
		next := int64(4)
		err := ReadEvents(bytes.NewReader(data), func(off int64, e Event) error {
			if off != next {
				t.Fatalf("event at %d, want %d", off, next)
			}
			next = off + int64(len(e.Raw))
			if next > int64(len(data)) {
				t.Fatalf("event ends at %d past the input's %d bytes", next, len(data))
			}
			return nil
		})
		if torn, ok := err.(*TornError); ok && torn.Offset != next && torn.Offset != 0 {
			t.Fatalf("torn at %d, last event ended at %d", torn.Offset, next)
		}
	})
}
