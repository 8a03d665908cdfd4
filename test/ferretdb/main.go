// Command ferretdb runs FerretDB v1 (embeddable package) with the SQLite backend for tests and
// local development. FerretDB's own cmd/ferretdb panics when built with `go install` (it needs
// generated version files), so this wrapper embeds github.com/FerretDB/FerretDB/ferretdb.
//
// Usage: ferretdb -listen 127.0.0.1:27017 -data /path/to/dir [-log-level warn]
//
// It serves until SIGTERM or SIGINT, then closes the listener, every connection and the SQLite
// databases before exiting 0.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:27017", "TCP listen address (host:port)")
	data := flag.String("data", "", "data directory for the SQLite databases (created if missing)")
	logLevel := flag.String("log-level", "warn", "log level: debug, info, warn or error")
	flag.Parse()

	if err := run(*listen, *data, *logLevel); err != nil {
		fmt.Fprintln(os.Stderr, "ferretdb:", err)
		os.Exit(1)
	}
}

func run(listen, data, logLevel string) error {
	if data == "" {
		return fmt.Errorf("-data is required")
	}

	var level slog.Level
	if err := level.UnmarshalText([]byte(logLevel)); err != nil {
		return fmt.Errorf("invalid -log-level %q: %w", logLevel, err)
	}

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	dir, err := filepath.Abs(data)
	if err != nil {
		return err
	}

	if err = os.MkdirAll(dir, 0o755); err != nil {
		return err
	}

	// WAL journal (FerretDB's default) with synchronous=FULL: a commit is fsynced before the
	// client gets its reply, so an acknowledged write survives a crash of the process or host.
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(wal)")
	q.Add("_pragma", "synchronous(full)")
	sqliteURL := (&url.URL{Scheme: "file", Opaque: filepath.ToSlash(dir) + "/", RawQuery: q.Encode()}).String()

	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: listen},
		Logger:    logger,
		Handler:   "sqlite",
		SQLiteURL: sqliteURL,
	})
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	logger.Info("ferretdb starting", "listen", listen, "sqlite", sqliteURL)

	// Run returns once ctx is canceled and the listener, connections and backend are closed.
	if err = f.Run(ctx); err != nil {
		return err
	}

	logger.Info("ferretdb stopped")

	return nil
}
