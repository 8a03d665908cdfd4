// Command ferretdb runs FerretDB v1 (the embeddable package) on PostgreSQL or SQLite for the
// tests and local development (test/kit/infra/ferretdb.sh chooses; load/README.md has the measurements). FerretDB's own cmd/ferretdb panics when built with `go install`
// (it needs generated version files), so this wrapper embeds github.com/FerretDB/FerretDB/ferretdb.
//
// Usage: ferretdb -listen 127.0.0.1:27017 -data /path/to/dir [-log-level warn]
//
//	[-backend sqlite|postgresql] [-postgresql-url postgres://…] [-serialize=true|false]
//
// It serves until SIGTERM or SIGINT, then closes the listener, every connection and the backend
// before exiting 0.
//
// Durability: SQLite runs in WAL mode with synchronous=FULL, and PostgreSQL commits with fsync on
// (its defaults), so a write is durable before its reply is sent.
//
// Atomicity: FerretDB v1 executes update, findAndModify and delete as "query, change in Go,
// write back by _id" without holding anything in between, so concurrent writers lose updates
// (100 concurrent {$inc: {n: 1}} end with n≈7 on SQLite, n≈95 on PostgreSQL) and a compare-and-swap such as
// findAndModify({_id, version: 1}, {$inc: {version: 1}}) can succeed for several callers. MongoDB
// makes each single-document write atomic. To give every client MongoDB's semantics, FerretDB
// listens on a private loopback port and this wrapper serves the public address through a small
// wire-protocol proxy that runs write commands (insert, update, delete, findAndModify) one at a
// time per namespace (database.collection); reads and everything else pass straight through.
// -serialize=false turns that off (measurement only: store.mongo.test.ts then fails on both backends).
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:27017", "TCP listen address (host:port)")
	data := flag.String("data", "", "data directory for the SQLite databases (created if missing)")
	logLevel := flag.String("log-level", "warn", "log level: debug, info, warn or error")
	backend := flag.String("backend", "sqlite", "storage backend: sqlite or postgresql")
	pgURL := flag.String("postgresql-url", "", "PostgreSQL URL for -backend postgresql (e.g. postgres://u@127.0.0.1:5432/ferretdb)")
	serialize := flag.Bool("serialize", true, "run write commands one at a time per namespace (see Atomicity)")
	serializeInserts := flag.Bool("serialize-inserts", true, "serialize insert commands too (see Atomicity)")
	flag.Parse()

	if err := run(*listen, *data, *logLevel, *backend, *pgURL, *serialize, *serializeInserts); err != nil {
		fmt.Fprintln(os.Stderr, "ferretdb:", err)
		os.Exit(1)
	}
}

func run(listen, data, logLevel, backend, pgURL string, serialize, serializeInserts bool) error {
	if data == "" {
		return errors.New("-data is required")
	}

	if backend != "sqlite" && backend != "postgresql" {
		return fmt.Errorf("invalid -backend %q: sqlite or postgresql", backend)
	}

	if backend == "postgresql" && pgURL == "" {
		return errors.New("-postgresql-url is required with -backend postgresql")
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

	// Bind the public address first, so a port that is taken fails fast and clearly.
	pub, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}

	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(wal)")
	q.Add("_pragma", "synchronous(full)")
	sqliteURL := (&url.URL{Scheme: "file", Opaque: filepath.ToSlash(dir) + "/", RawQuery: q.Encode()}).String()

	cfg := &ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: "127.0.0.1:0"},
		Logger:    logger,
		Handler:   backend,
		SQLiteURL: sqliteURL,
	}
	if backend == "postgresql" {
		cfg.SQLiteURL = ""
		cfg.PostgreSQLURL = pgURL
	}

	f, err := ferretdb.New(cfg)
	if err != nil {
		pub.Close()
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	done := make(chan struct{})

	go func() {
		defer close(done)

		// Returns once ctx is canceled and FerretDB's listener, connections and backend are closed.
		_ = f.Run(ctx)
	}()

	// Blocks until FerretDB listens (Run must have been called).
	u, err := url.Parse(f.MongoDBURI())
	if err != nil {
		stop()
		<-done
		pub.Close()

		return err
	}

	p := &proxy{
		backend: u.Host, logger: logger, serialize: serialize, serializeInserts: serializeInserts,
		conns: map[net.Conn]struct{}{},
	}

	logger.Info("ferretdb listening", "listen", pub.Addr().String(), "ferretdb", u.Host,
		"backend", backend, "serialize", serialize)

	served := make(chan struct{})

	go func() {
		defer close(served)
		p.serve(pub)
	}()

	<-ctx.Done()
	logger.Info("ferretdb stopping")

	pub.Close()
	<-served
	p.closeAll()
	<-done

	logger.Info("ferretdb stopped")

	return nil
}

// proxy forwards MongoDB wire-protocol traffic to FerretDB, serializing write commands per namespace.
type proxy struct {
	backend   string
	logger    *slog.Logger
	serialize bool // false: forward write commands without the stripe lock (measurement only)
	// false: insert commands pass without the stripe lock. An insert reads nothing, so it cannot
	// lose another write; on PostgreSQL each insert is one transaction and unique indexes are
	// enforced by PostgreSQL itself (test/kit/infra/ferretdb.sh sets it for that backend).
	serializeInserts bool

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// Lock stripes: a write command holds the stripe of its namespace while FerretDB executes it.
var stripes [64]sync.Mutex

// OP_MSG (https://github.com/mongodb/specifications/blob/master/source/message/OP_MSG.md).
const (
	opMsg          = 2013
	flagMoreToCome = 1 << 1
	maxMessageSize = 64 << 20
)

var writeCommands = map[string]bool{
	"insert":        true,
	"update":        true,
	"delete":        true,
	"findAndModify": true,
	"findandmodify": true,
}

func (p *proxy) serve(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				p.logger.Error("accept failed", "error", err)
			}

			return
		}

		if !p.track(c) {
			c.Close()
			continue
		}

		p.wg.Add(1)

		go func() {
			defer p.wg.Done()
			defer p.untrack(c)

			p.handle(c)
		}()
	}
}

func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()

	if p.conns == nil {
		return false
	}

	p.conns[c] = struct{}{}

	return true
}

func (p *proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()

	if p.conns != nil {
		delete(p.conns, c)
	}

	c.Close()
}

// closeAll closes every client connection and waits for their handlers to return.
func (p *proxy) closeAll() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()

	for c := range conns {
		c.Close()
	}

	p.wg.Wait()
}

// handle serves one client connection over its own connection to FerretDB. The wire protocol is
// request/response per connection, so requests are forwarded one at a time.
func (p *proxy) handle(client net.Conn) {
	backend, err := net.Dial("tcp", p.backend)
	if err != nil {
		p.logger.Error("backend dial failed", "error", err)
		return
	}
	defer backend.Close()

	cr := bufio.NewReader(client)
	br := bufio.NewReader(backend)

	for {
		req, err := readMessage(cr)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				p.logger.Debug("client read failed", "error", err)
			}

			return
		}

		if err = p.roundTrip(req, client, backend, br); err != nil {
			p.logger.Debug("proxy round trip failed", "error", err)
			return
		}
	}
}

func (p *proxy) roundTrip(req []byte, client, backend net.Conn, br *bufio.Reader) error {
	var held *sync.Mutex

	if cmd, ns, ok := writeNamespace(req); ok && p.serialize && (p.serializeInserts || cmd != "insert") {
		h := fnv.New32a()
		_, _ = h.Write([]byte(ns))
		held = &stripes[h.Sum32()%uint32(len(stripes))]
		held.Lock()
	}

	unlock := func() {
		if held != nil {
			held.Unlock()
			held = nil
		}
	}
	defer unlock()

	if _, err := backend.Write(req); err != nil {
		return err
	}

	if moreToCome(req) {
		return nil // no reply (unacknowledged write); the lock only covered sending it
	}

	for {
		resp, err := readMessage(br)
		if err != nil {
			return err
		}

		// The command has run; let the next writer of the namespace in before replying.
		unlock()

		if _, err = client.Write(resp); err != nil {
			return err
		}

		if !moreToCome(resp) {
			return nil
		}
	}
}

func readMessage(r *bufio.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}

	n := int(int32(binary.LittleEndian.Uint32(hdr[:])))
	if n < 16 || n > maxMessageSize {
		return nil, fmt.Errorf("invalid message length %d", n)
	}

	msg := make([]byte, n)
	copy(msg, hdr[:])

	if _, err := io.ReadFull(r, msg[4:]); err != nil {
		return nil, err
	}

	return msg, nil
}

func opCode(msg []byte) int32 { return int32(binary.LittleEndian.Uint32(msg[12:16])) }

func moreToCome(msg []byte) bool {
	return opCode(msg) == opMsg && len(msg) >= 20 && binary.LittleEndian.Uint32(msg[16:20])&flagMoreToCome != 0
}

// writeNamespace returns the command name and "db.collection" for OP_MSG write commands. A write
// command whose namespace cannot be read is serialized under the empty namespace.
func writeNamespace(msg []byte) (string, string, bool) {
	if opCode(msg) != opMsg || len(msg) < 21 {
		return "", "", false
	}

	// Sections follow the flags; the body (kind 0) is one BSON document. A checksum
	// (flag bit 0) may trail the sections.
	end := len(msg)
	if binary.LittleEndian.Uint32(msg[16:20])&1 != 0 {
		end -= 4
	}

	for pos := 20; pos < end; {
		kind := msg[pos]
		pos++

		if pos+4 > end {
			return "", "", false
		}

		size := int(int32(binary.LittleEndian.Uint32(msg[pos:])))
		if size < 5 || pos+size > end {
			return "", "", false
		}

		if kind == 0 {
			return commandNamespace(msg[pos : pos+size])
		}

		pos += size
	}

	return "", "", false
}

// commandNamespace reads the command name (first key), its collection (first value) and `$db`.
func commandNamespace(doc []byte) (string, string, bool) {
	var cmd, coll, db string

	first := true
	pos := 4

	for pos < len(doc)-1 {
		typ := doc[pos]
		pos++

		nameEnd := pos
		for nameEnd < len(doc) && doc[nameEnd] != 0 {
			nameEnd++
		}

		if nameEnd >= len(doc) {
			break
		}

		name := string(doc[pos:nameEnd])
		pos = nameEnd + 1

		size := valueSize(typ, doc[pos:])
		if size < 0 || pos+size > len(doc) {
			break
		}

		if typ == 0x02 && (first || name == "$db") && size > 5 {
			s := string(doc[pos+4 : pos+size-1])
			if first {
				coll = s
			} else {
				db = s
			}
		}

		if first {
			cmd = name
			if !writeCommands[cmd] {
				return "", "", false
			}

			first = false
		}

		pos += size
	}

	if cmd == "" {
		return "", "", false
	}

	return cmd, db + "." + coll, true
}

// valueSize returns the size of a BSON value of the given type at the start of b, or -1.
func valueSize(typ byte, b []byte) int {
	i32 := func(off int) int {
		if len(b) < off+4 {
			return -1
		}

		return int(int32(binary.LittleEndian.Uint32(b[off:])))
	}
	cstr := func(off int) int {
		for i := off; i < len(b); i++ {
			if b[i] == 0 {
				return i + 1 - off
			}
		}

		return -1
	}

	switch typ {
	case 0x01, 0x09, 0x11, 0x12: // double, datetime, timestamp, int64
		return 8
	case 0x02, 0x0D, 0x0E: // string, JavaScript, symbol
		if n := i32(0); n >= 1 {
			return 4 + n
		}
	case 0x03, 0x04, 0x0F: // document, array, code with scope
		return i32(0)
	case 0x05: // binary
		if n := i32(0); n >= 0 {
			return 5 + n
		}
	case 0x06, 0x0A, 0x7F, 0xFF: // undefined, null, max key, min key
		return 0
	case 0x07: // ObjectId
		return 12
	case 0x08: // bool
		return 1
	case 0x0B: // regex: two C strings
		if a := cstr(0); a > 0 {
			if c := cstr(a); c > 0 {
				return a + c
			}
		}
	case 0x0C: // DBPointer
		if n := i32(0); n >= 1 {
			return 4 + n + 12
		}
	case 0x10: // int32
		return 4
	case 0x13: // decimal128
		return 16
	}

	return -1
}
