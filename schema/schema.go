// Package schema embeds the ACS v0.1.0 JSON Schemas turnguard validates
// against (see README.md for where each file comes from and what was changed)
// and compiles them once into a Validator.
package schema

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/turnguard/turnguard/internal/core/acs"
)

// Base is the $id base every embedded schema is published under.
const Base = "https://genai-security-project.github.io/agent-control-standard/schema/v0.1.0/"

// Dir is the directory of the embedded schema set inside FS.
const Dir = "v0.1.0"

//go:embed v0.1.0
var files embed.FS

// FS returns the embedded schema files, rooted so that Dir is its only entry.
func FS() fs.FS { return files }

// Validator validates ACS request envelopes, their method payloads and
// response envelopes. It is safe for concurrent use.
type Validator struct {
	request  *jsonschema.Schema
	response *jsonschema.Schema
	payloads map[string]*jsonschema.Schema
	printer  *message.Printer
	quick    *quicker
}

// New compiles the embedded schema set: the request and response envelopes
// and the payload schema of every method in the acs method table.
func New() (*Validator, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	err := fs.WalkDir(files, Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".json" {
			return err
		}
		raw, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return fmt.Errorf("schema %s: %w", p, err)
		}
		url := Base + strings.TrimPrefix(p, Dir+"/")
		if obj, ok := doc.(map[string]any); ok && obj["$id"] != url {
			return fmt.Errorf("schema %s: $id %v, want %s", p, obj["$id"], url)
		}
		return c.AddResource(url, doc)
	})
	if err != nil {
		return nil, fmt.Errorf("load schemas: %w", err)
	}
	v := &Validator{payloads: map[string]*jsonschema.Schema{}, printer: message.NewPrinter(language.English)}
	if v.request, err = c.Compile(Base + "request-envelope.json"); err != nil {
		return nil, fmt.Errorf("compile request envelope: %w", err)
	}
	if v.response, err = c.Compile(Base + "response-envelope.json"); err != nil {
		return nil, fmt.Errorf("compile response envelope: %w", err)
	}
	payloads := map[string]string{HandshakeMethod: HandshakePayloadSchema}
	for _, m := range acs.Methods() {
		payloads[m.Method] = m.PayloadSchema
	}
	for method, ref := range payloads {
		s, err := c.Compile(Base + ref)
		if err != nil {
			return nil, fmt.Errorf("compile payload schema of %s: %w", method, err)
		}
		v.payloads[method] = s
	}
	roots := []*jsonschema.Schema{v.request, v.response}
	for _, s := range v.payloads {
		roots = append(roots, s)
	}
	v.quick = newQuicker(roots...)
	return v, nil
}

// The handshake is not a hook, so it is not in the acs method table, but its
// ClientHello payload is validated like one.
const (
	HandshakeMethod        = acs.HandshakeMethod
	HandshakePayloadSchema = "handshake.json#/$defs/ClientHello"
)

// PayloadSchema returns the payload schema reference of a method, or "".
func PayloadSchema(method string) string {
	if method == HandshakeMethod {
		return HandshakePayloadSchema
	}
	if m := acs.LookupMethod(method); m != nil {
		return m.PayloadSchema
	}
	return ""
}

// Decode parses JSON the way the validator expects instances: numbers stay
// exact (json.Number) and trailing data is an error.
func Decode(raw []byte) (any, error) { return jsonschema.UnmarshalJSON(bytes.NewReader(raw)) }

// ValidateRequest checks a decoded request envelope against
// request-envelope.json. A failure is an *Error with CodeInvalidRequest.
func (v *Validator) ValidateRequest(doc any) error {
	return v.check(v.request, doc, "", acs.CodeInvalidRequest, acs.ReasonEnvelopeInvalid, func() string { return "request envelope does not match request-envelope.json" })
}

// ValidatePayload checks a decoded payload against its method's schema. A
// failure is an *Error with CodeInvalidParams whose pointers are
// relative to the envelope (/params/payload/...).
func (v *Validator) ValidatePayload(method string, payload any) error {
	s, ok := v.payloads[method]
	if !ok {
		return &acs.Error{Code: acs.CodeCapabilityNotNegotiated, Reason: acs.ReasonUnknownMethod,
			Message: fmt.Sprintf("method %q is not evaluated by turnguard", method)}
	}
	return v.check(s, payload, "/params/payload", acs.CodeInvalidParams, acs.ReasonPayloadInvalid,
		func() string { return fmt.Sprintf("payload does not match %s", PayloadSchema(method)) })
}

// ValidateResponse checks a decoded response envelope against
// response-envelope.json. A failure is an *Error with CodeInternalError.
func (v *Validator) ValidateResponse(doc any) error {
	return v.check(v.response, doc, "", acs.CodeInternalError, "response_invalid", func() string { return "response envelope does not match response-envelope.json" })
}

// check validates doc against s; message words a failure (it is called
// only then: a payload's names its schema, formatted).
func (v *Validator) check(s *jsonschema.Schema, doc any, prefix string, code acs.Code, reason string, message func() string) error {
	if v.quick.check(s, doc, 0) == valid {
		return nil
	}
	err := s.Validate(doc)
	if err == nil {
		return nil
	}
	msg := message()
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &acs.Error{Code: code, Reason: reason, Message: fmt.Sprintf("%s: %v", msg, err)}
	}
	return &acs.Error{Code: code, Reason: reason, Message: msg, Violations: v.violations(ve, prefix)}
}

// violations flattens a validation error tree into its leaves, each located
// by a JSON pointer, sorted by pointer then message. The library reports
// causes in map order, so sorting is what makes output reproducible.
func (v *Validator) violations(root *jsonschema.ValidationError, prefix string) []acs.Violation {
	var out []acs.Violation
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			out = append(out, acs.Violation{Pointer: prefix + pointer(e.InstanceLocation), Message: e.ErrorKind.LocalizedString(v.printer)})
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(root)
	slices.SortFunc(out, func(a, b acs.Violation) int {
		if c := strings.Compare(a.Pointer, b.Pointer); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	return slices.Compact(out)
}

// pointer renders an instance location as an RFC 6901 JSON pointer.
func pointer(loc []string) string {
	var b strings.Builder
	for _, tok := range loc {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(tok))
	}
	return b.String()
}
