//go:build cuzk

package cuzkffi

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// recordingHandler keeps every record it is given (from the library's threads).
type recordingHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r)
	return nil
}
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler      { return h }

func (h *recordingHandler) take() []slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	records := h.records
	h.records = nil
	return records
}

func target(r slog.Record) string {
	var target string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "target" {
			target = a.Value.String()
		}
		return true
	})
	return target
}

func TestSetLogger(t *testing.T) {
	handler := &recordingHandler{}
	if err := SetLogger(slog.New(handler), slog.LevelInfo); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := SetLogger(nil, 0); err != nil {
			t.Error(err)
		}
	}()
	// A fresh engine logs its start at INFO (target cuzk::engine).
	if err := Close(); err != nil {
		t.Fatal(err)
	}
	if err := Init(testConfig()); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadEngineStatus(); err != nil {
		t.Fatal(err)
	}
	records := handler.take()
	started := false
	for _, r := range records {
		if r.Level < slog.LevelInfo {
			t.Errorf("a %v record with minimum level INFO: %q", r.Level, r.Message)
		}
		if r.Level == slog.LevelInfo && strings.HasPrefix(target(r), "cuzk::engine") && strings.HasPrefix(r.Message, "cuzk engine started") {
			started = true
		}
	}
	if !started {
		t.Errorf("no INFO record of the engine's start among %d records", len(records))
	}
	if libraryLevel(slog.LevelDebug-8) != 5 || libraryLevel(slog.LevelError) != 1 || slogLevel(2) != slog.LevelWarn {
		t.Error("level mapping")
	}
}
