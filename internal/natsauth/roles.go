// Package natsauth is turnguard's NATS identity layout: one operator; the
// TURNGUARD account holding every stream and bucket (processor and admin
// users); one account per tenant for its agents and one for the security
// role, which import what they may use from TURNGUARD, so that the reply
// or deliver subject of anything they send lands in their own account;
// users minted per role with subject permissions, all as NATS JWTs
// (nats-io/jwt, nkeys). The embedded server trusts the operator; an
// external server is configured with the same operator and account JWTs
// (ServerConfig), so the roles mean the same in both.
package natsauth

import (
	"errors"
	"fmt"
	"regexp"
	"slices"

	"github.com/nats-io/jwt/v2"

	"github.com/turnguard/turnguard/internal/core/acs"
)

// Role is what a credential may do.
type Role string

const (
	// RoleAgent publishes one tenant's envelopes and reads that tenant's
	// decisions: an agent framework or its adapter.
	RoleAgent Role = "agent"
	// RoleSecurity reads decisions, alerts, dead letters, state and hooks
	// of every tenant and publishes nothing: a security team's monitor.
	RoleSecurity Role = "security"
	// RoleAdmin manages streams, buckets and consumers and runs replay; it
	// cannot speak for the processor.
	RoleAdmin Role = "admin"
	// RoleProcessor is turnguard itself: the only identity that publishes
	// decisions, alerts and dead letters and writes the state, membership
	// and handshake buckets.
	RoleProcessor Role = "processor"
)

// Roles lists every role, in the order the creds directory is written.
var Roles = []Role{RoleAgent, RoleSecurity, RoleAdmin, RoleProcessor}

// ParseRole returns the role named s.
func ParseRole(s string) (Role, error) {
	r := Role(s)
	if !slices.Contains(Roles, r) {
		return "", fmt.Errorf("unknown role %q: want agent, security, admin or processor", s)
	}
	return r, nil
}

// ProcessorOwned are the subjects only the processor may publish to: a
// message there is either turnguard's or a forgery.
var ProcessorOwned = []string{
	acs.DecisionsPrefix + ".>",
	acs.AlertsPrefix + ".>",
	acs.DLQPrefix + ".>",
	acs.KVSubject(acs.StateBucket, ">"),
	acs.KVSubject(acs.MembersBucket, ">"),
	acs.KVSubject(acs.HandshakeBucket, ">"),
}

// tenantPattern is a tenant a credential can be bound to: one NATS subject
// token, no wildcard, not one of turnguard's reserved tenants (which start
// with an underscore).
var tenantPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// ErrBadTenant is returned for a tenant name a credential cannot be bound
// to.
var ErrBadTenant = errors.New("tenant must be 1-64 letters, digits, '_' or '-', starting with a letter or digit")

// User is one credential to mint.
type User struct {
	Role Role
	// Tenant binds an agent to one tenant's subjects; the other roles are
	// not bound to a tenant.
	Tenant string
	// Name labels the credential (the JWT's name); default <role>[-<tenant>].
	Name string
}

// Validate checks that the user can be minted.
func (u User) Validate() error {
	if _, err := ParseRole(string(u.Role)); err != nil {
		return err
	}
	if u.Role == RoleAgent {
		if !tenantPattern.MatchString(u.Tenant) {
			return fmt.Errorf("agent tenant %q: %w", u.Tenant, ErrBadTenant)
		}
	} else if u.Tenant != "" {
		return fmt.Errorf("role %s is not bound to a tenant (only agent credentials are)", u.Role)
	}
	return nil
}

// DisplayName is the credential's name.
func (u User) DisplayName() string {
	switch {
	case u.Name != "":
		return u.Name
	case u.Tenant != "":
		return string(u.Role) + "-" + u.Tenant
	default:
		return string(u.Role)
	}
}

// InboxPrefix is the reply-subject prefix a role's connection must use
// (nats.CustomInboxPrefix, the nats CLI's --inbox-prefix). Agents and the
// security role may only subscribe below their own prefix, so nobody reads
// the replies (publish acknowledgements, state reads) meant for another.
// Empty means the default _INBOX.
func (u User) InboxPrefix() string {
	switch u.Role {
	case RoleAgent:
		return "_INBOX." + string(RoleAgent) + "." + u.Tenant
	case RoleSecurity:
		return securityInbox
	default:
		return ""
	}
}

// Permissions are the subject permissions of the user's role.
func (u User) Permissions() jwt.Permissions {
	var p jwt.Permissions
	switch u.Role {
	case RoleAgent:
		p.Pub.Allow.Add(acs.InboundPrefix + "." + u.Tenant + ".>")
		p.Sub.Allow.Add(acs.DecisionsPrefix+"."+u.Tenant+".>", u.InboxPrefix()+".>")
	case RoleSecurity:
		p.Pub.Allow.Add(securityAPI()...)
		p.Sub.Allow.Add("acs.>", u.InboxPrefix()+".>")
	case RoleAdmin:
		p.Pub.Allow.Add(">")
		p.Pub.Deny.Add(ProcessorOwned...)
		p.Sub.Allow.Add(">")
	case RoleProcessor:
		p.Pub.Allow.Add(">")
		p.Sub.Allow.Add(">")
	}
	return p
}

// securityAPI is the JetStream API a read-only monitor needs: stream and
// message reads everywhere, and consumers of its own on every stream but
// ACS_HOOKS, whose durable partition consumers belong to the processor (a
// consumer create there could redefine one of them). No acknowledgements
// ($JS.ACK) either: an ack of a processor's delivery would drop an envelope
// unprocessed, and ordered consumers do not ack. Consumers may be deleted
// (a watcher deletes its own when it stops) except on ACS_PROCESSORS, where
// the processors' membership watchers live; a monitor's watcher there is
// removed by its inactivity threshold instead.
func securityAPI() []string {
	api := []string{
		"$JS.API.INFO",
		"$JS.API.STREAM.NAMES",
		"$JS.API.STREAM.LIST",
		"$JS.API.STREAM.INFO.*",
		"$JS.API.STREAM.MSG.GET.*",
		"$JS.API.DIRECT.GET.>",
		// Flow-control replies of the push consumers KV watchers use
		// (nats kv ls, ListKeys): they only pace a delivery.
		"$JS.FC.>",
	}
	for _, s := range SecurityStreams() {
		api = append(api,
			"$JS.API.CONSUMER.CREATE."+s,
			"$JS.API.CONSUMER.CREATE."+s+".>",
			"$JS.API.CONSUMER.INFO."+s+".*",
			"$JS.API.CONSUMER.MSG.NEXT."+s+".*",
		)
		if s != acs.KVStream(acs.MembersBucket) {
			api = append(api, "$JS.API.CONSUMER.DELETE."+s+".*")
		}
	}
	// ACS_HOOKS: push consumers on the security inbox only (the gateway
	// checks), created but never read by pull, deleted or inspected: the
	// processor's partition consumers are pull consumers there.
	return append(api, "$JS.API.CONSUMER.CREATE."+acs.HooksStream, "$JS.API.CONSUMER.CREATE."+acs.HooksStream+".>")
}

// SecurityPushOnly are the streams where the security role may create push
// consumers on its inbox but no pull consumers: ACS_HOOKS, where a pull
// request on one of the processor's partition consumers would take its
// envelopes, and where the live hooks are not in the security account's
// acs.> (NATS does not pass a message that arrived through a service
// import — an agent's envelope — on to a stream export).
func SecurityPushOnly() []string { return []string{acs.HooksStream} }

// SecurityConsumerCreate is the subject prefix in turnguard's account on
// which the processor creates consumers for the security role
// (internal/secgate): the security account's
// $JS.API.CONSUMER.CREATE.<stream>[.…] is imported from there rather than
// from JetStream itself, so that a consumer's deliver subject is checked
// before it is created. JetStream would deliver a push consumer's messages
// to any subject in turnguard's account, its own streams' included.
const SecurityConsumerCreate = "turnguard.security.consumer.create"

// securityInbox is where the security role's replies and push deliveries
// land: in turnguard's account a deliver subject there is exported to the
// security account, and nothing of turnguard's listens below it.
const securityInbox = "_INBOX." + string(RoleSecurity)

// SecurityDeliverPrefix is the only deliver subject prefix the consumer
// gateway accepts for a push consumer of the security role.
const SecurityDeliverPrefix = securityInbox + "."

// SecurityStreams are the streams the security role may have consumers on:
// all but ACS_HOOKS, whose durable partition consumers are the
// processor's.
func SecurityStreams() []string {
	return []string{acs.DecisionsStream, acs.AlertsStream, acs.DLQStream,
		acs.KVStream(acs.StateBucket), acs.KVStream(acs.MembersBucket), acs.KVStream(acs.HandshakeBucket)}
}

// turnguardExports is what turnguard's account offers the others. Exports
// are public: only the authority signs accounts, so only it decides who
// imports what (tenantImports, securityImports).
func turnguardExports() jwt.Exports {
	svc := func(subject string, stream bool) *jwt.Export {
		e := &jwt.Export{Subject: jwt.Subject(subject), Type: jwt.Service}
		if stream {
			e.ResponseType = jwt.ResponseTypeStream
		}
		return e
	}
	return jwt.Exports{
		// Agents' envelopes, with JetStream's publish ack as the response.
		svc(acs.InboundPrefix+".>", false),
		// Decisions to agents; everything live to the security role.
		{Subject: "acs.>", Type: jwt.Stream},
		// The security role's reads.
		svc("$JS.API.INFO", false),
		svc("$JS.API.STREAM.NAMES", false),
		svc("$JS.API.STREAM.LIST", false),
		svc("$JS.API.STREAM.INFO.*", false),
		svc("$JS.API.STREAM.MSG.GET.*", false),
		svc("$JS.API.DIRECT.GET.>", true),
		svc("$JS.API.CONSUMER.INFO.>", false),
		svc("$JS.API.CONSUMER.DELETE.>", false),
		svc("$JS.API.CONSUMER.MSG.NEXT.>", true),
		svc("$JS.FC.>", false),
		svc(SecurityConsumerCreate+".>", false),
		{Subject: jwt.Subject(securityInbox + ".>"), Type: jwt.Stream},
	}
}

// tenantImports are a tenant account's: its envelopes go to turnguard as a
// service request, so JetStream's publish ack comes back through the
// response mapping into the tenant's account whatever reply subject the
// agent named; its decisions come in as a stream.
func tenantImports(turnguard, tenant string) jwt.Imports {
	return jwt.Imports{
		{Name: "hooks", Subject: jwt.Subject(acs.InboundPrefix + "." + tenant + ".>"), Account: turnguard, Type: jwt.Service},
		{Name: "decisions", Subject: jwt.Subject(acs.DecisionsPrefix + "." + tenant + ".>"), Account: turnguard, Type: jwt.Stream},
	}
}

// securityImports are the security account's: acs.> live as a stream, the
// JetStream reads as services (their replies, a direct get's included,
// come back into the security account whatever reply subject was named),
// consumer creation through the processor's gateway, and push deliveries
// to its inbox.
func securityImports(turnguard string) jwt.Imports {
	svc := func(subject string) *jwt.Import {
		return &jwt.Import{Subject: jwt.Subject(subject), Account: turnguard, Type: jwt.Service}
	}
	imports := jwt.Imports{
		{Name: "live", Subject: "acs.>", Account: turnguard, Type: jwt.Stream},
		{Name: "deliveries", Subject: jwt.Subject(securityInbox + ".>"), Account: turnguard, Type: jwt.Stream},
		svc("$JS.API.INFO"),
		svc("$JS.API.STREAM.NAMES"),
		svc("$JS.API.STREAM.LIST"),
		svc("$JS.API.STREAM.INFO.*"),
		svc("$JS.API.STREAM.MSG.GET.*"),
		svc("$JS.API.DIRECT.GET.>"),
		svc("$JS.FC.>"),
	}
	for _, s := range SecurityStreams() {
		imports = append(imports,
			&jwt.Import{Subject: jwt.Subject(SecurityConsumerCreate + "." + s), LocalSubject: jwt.RenamingSubject("$JS.API.CONSUMER.CREATE." + s), Account: turnguard, Type: jwt.Service},
			&jwt.Import{Subject: jwt.Subject(SecurityConsumerCreate + "." + s + ".>"), LocalSubject: jwt.RenamingSubject("$JS.API.CONSUMER.CREATE." + s + ".>"), Account: turnguard, Type: jwt.Service},
			svc("$JS.API.CONSUMER.INFO."+s+".*"),
			svc("$JS.API.CONSUMER.MSG.NEXT."+s+".*"),
		)
		if s != acs.KVStream(acs.MembersBucket) {
			imports = append(imports, svc("$JS.API.CONSUMER.DELETE."+s+".*"))
		}
	}
	for _, s := range SecurityPushOnly() {
		imports = append(imports,
			&jwt.Import{Subject: jwt.Subject(SecurityConsumerCreate + "." + s), LocalSubject: jwt.RenamingSubject("$JS.API.CONSUMER.CREATE." + s), Account: turnguard, Type: jwt.Service},
			&jwt.Import{Subject: jwt.Subject(SecurityConsumerCreate + "." + s + ".>"), LocalSubject: jwt.RenamingSubject("$JS.API.CONSUMER.CREATE." + s + ".>"), Account: turnguard, Type: jwt.Service},
		)
	}
	return imports
}

// AccountName is the name of the account a user of u's role belongs to.
func (u User) AccountName() string {
	switch u.Role {
	case RoleAgent:
		return tenantAccountPrefix + u.Tenant
	case RoleSecurity:
		return SecurityName
	default:
		return AccountName
	}
}

// AccountImports describes what u's account imports from turnguard's
// (named by AccountName rather than by its key); nil for turnguard's own
// account.
func (u User) AccountImports() jwt.Imports {
	switch u.Role {
	case RoleAgent:
		return tenantImports(AccountName, u.Tenant)
	case RoleSecurity:
		return securityImports(AccountName)
	default:
		return nil
	}
}
