//go:build cuzk

package cuzkffi

/*
#include "cuzk.h"
extern void cuzkGoLogRecord(void *user_data, uint32_t level, char *target, char *message);
*/
import "C"

import (
	"context"
	"log/slog"
	"sync/atomic"
	"unsafe"
)

// goLogger receives the library's records while SetLogger has installed it.
var goLogger atomic.Pointer[slog.Logger]

// SetLogger sends the library's log records (its own and those of filecoin-proofs and
// bellperson inside it) at minLevel or above to logger, for the whole process, instead of
// stderr: each record's message, level and, as the attribute "target", the module that
// logged it. Library TRACE records have level slog.LevelDebug-4. A nil logger sends them back
// to stderr, filtered by RUST_LOG. Call it before the first proving call to catch the engine's
// start. A go-log (zap) logger plugs in through a slog handler such as zapslog's.
func SetLogger(logger *slog.Logger, minLevel slog.Level) error {
	var cerr *C.cuzk_error
	if logger == nil {
		status := C.cuzk_log_set_callback(nil, nil, 0, &cerr)
		goLogger.Store(nil)
		return takeError(status, cerr)
	}
	goLogger.Store(logger)
	callback := C.cuzk_log_callback(C.cuzkGoLogRecord)
	status := C.cuzk_log_set_callback(callback, nil, C.uint32_t(libraryLevel(minLevel)), &cerr)
	if err := takeError(status, cerr); err != nil {
		goLogger.Store(nil)
		return err
	}
	return nil
}

// libraryLevel is the CUZK_LOG_* level that passes the records of level min and above.
func libraryLevel(min slog.Level) uint32 {
	switch {
	case min > slog.LevelWarn:
		return C.CUZK_LOG_ERROR
	case min > slog.LevelInfo:
		return C.CUZK_LOG_WARN
	case min > slog.LevelDebug:
		return C.CUZK_LOG_INFO
	case min > slog.LevelDebug-4:
		return C.CUZK_LOG_DEBUG
	default:
		return C.CUZK_LOG_TRACE
	}
}

// slogLevel is the slog level of a CUZK_LOG_* level.
func slogLevel(level uint32) slog.Level {
	switch level {
	case C.CUZK_LOG_ERROR:
		return slog.LevelError
	case C.CUZK_LOG_WARN:
		return slog.LevelWarn
	case C.CUZK_LOG_INFO:
		return slog.LevelInfo
	case C.CUZK_LOG_DEBUG:
		return slog.LevelDebug
	default:
		return slog.LevelDebug - 4
	}
}

// cuzkGoLogRecord is the C callback: called on the library's threads, any of them.
//
//export cuzkGoLogRecord
func cuzkGoLogRecord(_ unsafe.Pointer, level C.uint32_t, target *C.char, message *C.char) {
	if logger := goLogger.Load(); logger != nil {
		logger.Log(context.Background(), slogLevel(uint32(level)), C.GoString(message), "target", C.GoString(target))
	}
}
