package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/turnguard/turnguard/internal/connlimit"
	"github.com/turnguard/turnguard/internal/core/acs"
)

// Handler routes POST /acs, POST /hooks/{claude-code,codex,cursor}, GET
// /healthz, GET /readyz and GET /receipt-key.
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /acs", g.serveACS)
	mux.HandleFunc("POST /hooks/{host}", g.serveHook)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { writeText(w, http.StatusOK, "ok\n") })
	mux.HandleFunc("GET /readyz", g.serveReady)
	mux.HandleFunc("GET /receipt-key", g.serveReceiptKey)
	return mux
}

func (g *Gateway) serveReady(w http.ResponseWriter, _ *http.Request) {
	if !g.nc.IsConnected() {
		writeText(w, http.StatusServiceUnavailable, "not connected to NATS\n")
		return
	}
	if g.cfg.Ready != nil {
		if err := g.cfg.Ready(); err != nil {
			writeText(w, http.StatusServiceUnavailable, err.Error()+"\n")
			return
		}
	}
	writeText(w, http.StatusOK, "ready\n")
}

func (g *Gateway) serveReceiptKey(w http.ResponseWriter, _ *http.Request) {
	if g.cfg.Receipts == nil {
		writeText(w, http.StatusNotFound, "receipts are off\n")
		return
	}
	w.Header().Set(acs.HdrReceiptKey, g.cfg.Receipts.KeyID)
	w.Header().Set("Content-Type", "application/x-pem-file")
	_, _ = w.Write(g.cfg.Receipts.PublicPEM())
}

func writeText(w http.ResponseWriter, status int, s string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, s)
}

// serveACS answers one JSON-RPC request or a batch: HTTP 200 with a
// JSON-RPC body, except for a request of no known caller (401, its body
// unread) and one that does not say it is JSON (415), so that a browser's
// "simple request" — a form post or text/plain, which needs no CORS
// preflight — never reaches the Guardian.
func (g *Gateway) serveACS(w http.ResponseWriter, r *http.Request) {
	who := g.caller(w, r)
	if who == nil {
		return
	}
	ctx := r.Context()
	from := origin{caller: who, remote: r.RemoteAddr, dl: &dlBudget{left: g.cfg.MaxDeadLetters}}
	if g.cfg.WriteTimeout > 0 {
		rc := http.NewResponseController(w)
		from.extend = func() { _ = rc.SetWriteDeadline(time.Now().Add(g.cfg.WriteTimeout)) }
	}
	defer g.summariseDeadLetters(ctx, from)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.cfg.MaxBodyBytes))
	var mbe *http.MaxBytesError
	tooLarge := errors.As(err, &mbe)
	if ct := r.Header.Get("Content-Type"); !isJSON(ct) {
		ref := &acs.Error{Code: acs.CodeInvalidRequest, Reason: acs.ReasonContentType,
			Message: fmt.Sprintf("Content-Type %q: POST /acs takes application/json", ct)}
		g.deadLetter(ctx, from, incoming{raw: body}, ref, tooLarge)
		g.write(w, http.StatusUnsupportedMediaType, g.refuse(incoming{}, ref))
		return
	}
	var rep reply
	switch {
	case tooLarge:
		rep = g.reject(ctx, from, incoming{raw: body}, &acs.Error{Code: acs.CodeInvalidRequest, Reason: acs.ReasonTooLarge,
			Message: fmt.Sprintf("request body exceeds %d bytes", g.cfg.MaxBodyBytes)}, true)
	case err != nil:
		rep = g.refuse(incoming{}, &acs.Error{Code: acs.CodeParseError, Reason: acs.ReasonParseError, Message: "cannot read the request body: " + err.Error()})
	default:
		rep = g.dispatch(ctx, from, body, r.TLS != nil)
	}
	g.write(w, http.StatusOK, rep)
}

// caller authenticates a request: its caller, or nil once it was answered
// 401.
func (g *Gateway) caller(w http.ResponseWriter, r *http.Request) *Caller {
	who, why := g.authenticate(r)
	if who == nil {
		g.unauthenticated(w, r, why)
		return nil
	}
	// The connection has shown a credential: it leaves the budget and the
	// short deadlines of connections that have not.
	connlimit.Authenticated(r.Context())
	if r.URL.Query().Has(accessTokenParam) {
		// RFC 6750 §2.3: a response to a request with the token in its
		// URL must not be cached, lest the URL be replayed from a cache.
		w.Header().Set("Cache-Control", "no-store")
	}
	return who
}

// write sends a reply with its receipt headers.
func (g *Gateway) write(w http.ResponseWriter, status int, rep reply) {
	out := rep.raw
	if out == nil {
		var err error
		if out, err = json.Marshal(rep.doc); err != nil {
			out, _ = json.Marshal(g.refuse(incoming{}, &acs.Error{Code: acs.CodeInternalError, Reason: "internal_error", Message: err.Error()}).doc)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	receiptHeaders(w, rep)
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

// receiptHeaders sets a reply's receipt headers, when it has a receipt.
func receiptHeaders(w http.ResponseWriter, rep reply) {
	if rep.receipt == "" {
		return
	}
	w.Header().Set(acs.HdrReceipt, rep.receipt)
	w.Header().Set(acs.HdrReceiptKey, rep.receiptKey)
	if rep.seq != 0 {
		// What the receipt is bound to, for clients verifying it.
		w.Header().Set(acs.HdrStreamSeq, strconv.FormatUint(rep.seq, 10))
	}
}

// isJSON reports whether a Content-Type is application/json, parameters
// (charset=utf-8) allowed.
func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}
