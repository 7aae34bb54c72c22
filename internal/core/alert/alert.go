// Package alert builds the alerts turnguard publishes on
// acs.alerts.<tenant>.<severity>.<rule_id>: OCSF Detection Findings (class
// 2004). A finding is built from envelope facts only — its time is the
// envelope's — so a replay builds the same finding.
package alert

import (
	"strconv"
	"strings"
	"time"
)

// OCSF identifiers of a Detection Finding.
const (
	ClassUID     = 2004
	CategoryUID  = 2
	TypeCreate   = ClassUID*100 + 1
	OCSFVersion  = "1.5.0"
	ProductName  = "turnguard"
	subjectStart = "acs.alerts"
)

// Finding is an OCSF Detection Finding. Fields turnguard does not fill are
// left out.
type Finding struct {
	ActivityID    int            `json:"activity_id"`
	ActivityName  string         `json:"activity_name"`
	CategoryUID   int            `json:"category_uid"`
	CategoryName  string         `json:"category_name"`
	ClassUID      int            `json:"class_uid"`
	ClassName     string         `json:"class_name"`
	TypeUID       int            `json:"type_uid"`
	TypeName      string         `json:"type_name"`
	Time          int64          `json:"time"`
	SeverityID    int            `json:"severity_id"`
	Severity      string         `json:"severity"`
	StatusID      int            `json:"status_id"`
	Status        string         `json:"status"`
	ActionID      int            `json:"action_id"`
	Action        string         `json:"action"`
	DispositionID int            `json:"disposition_id"`
	Disposition   string         `json:"disposition"`
	IsAlert       bool           `json:"is_alert"`
	Message       string         `json:"message"`
	FindingInfo   FindingInfo    `json:"finding_info"`
	Metadata      Metadata       `json:"metadata"`
	Actor         Actor          `json:"actor"`
	Evidences     []Evidence     `json:"evidences"`
	Unmapped      map[string]any `json:"unmapped"`
}

// FindingInfo names the finding and the rule (analytic) behind it.
type FindingInfo struct {
	UID         string   `json:"uid"`
	Title       string   `json:"title"`
	Desc        string   `json:"desc,omitempty"`
	Types       []string `json:"types,omitempty"`
	CreatedTime int64    `json:"created_time"`
	Analytic    Analytic `json:"analytic"`
}

// Analytic is the rule that produced the finding.
type Analytic struct {
	UID    string `json:"uid"`
	Name   string `json:"name"`
	TypeID int    `json:"type_id"`
	Type   string `json:"type"`
}

// Metadata names the producer.
type Metadata struct {
	Version string  `json:"version"`
	LogName string  `json:"log_name"`
	Product Product `json:"product"`
}

// Product is turnguard.
type Product struct {
	Name       string `json:"name"`
	VendorName string `json:"vendor_name"`
}

// Actor is the agent and its session.
type Actor struct {
	User    User    `json:"user"`
	Session Session `json:"session"`
}

// User is the agent, typed "AI Agent" as ACS's OCSF extension does.
type User struct {
	UID    string `json:"uid"`
	Name   string `json:"name,omitempty"`
	TypeID int    `json:"type_id"`
	Type   string `json:"type"`
}

// Session is the ACS session.
type Session struct {
	UID string `json:"uid"`
}

// Evidence is one piece of evidence: the triggering envelope, or the
// envelope that tainted the session.
type Evidence struct {
	Data map[string]any `json:"data"`
}

// SeverityID maps rule severities to OCSF severity ids.
func SeverityID(severity string) (int, string) {
	switch severity {
	case "informational":
		return 1, "Informational"
	case "low":
		return 2, "Low"
	case "medium":
		return 3, "Medium"
	case "high":
		return 4, "High"
	case "critical":
		return 5, "Critical"
	}
	return 0, "Unknown"
}

// Subject is where an alert of a rule is published.
func Subject(tenant, severity, ruleID string) string {
	return subjectStart + "." + tenant + "." + severity + "." + ruleID
}

// MsgID is the deduplication id of a rule's alert on the envelope at the
// given inbound stream sequence.
func MsgID(ruleID string, seq uint64) string {
	return "alert:" + ruleID + ":" + strconv.FormatUint(seq, 10)
}

// UID is the finding's uid: stable for a rule, session and envelope.
func UID(ruleID, tenant, sessionID string, seq uint64) string {
	return strings.Join([]string{ruleID, tenant, sessionID, strconv.FormatUint(seq, 10)}, ":")
}

// SystemTenant is the tenant token of turnguard's own operational alerts.
const SystemTenant = "_system"

// Operational builds an alert about turnguard itself (such as a refused
// rule reload), published on acs.alerts._system.<severity>.<id>.
func Operational(id, severity, title, message string, at time.Time, details map[string]any) (string, Finding) {
	sevID, sev := SeverityID(severity)
	ms := at.UnixMilli()
	f := Finding{
		ActivityID: 1, ActivityName: "Create", CategoryUID: CategoryUID, CategoryName: "Findings",
		ClassUID: ClassUID, ClassName: "Detection Finding", TypeUID: TypeCreate, TypeName: "Detection Finding: Create",
		Time: ms, SeverityID: sevID, Severity: sev, StatusID: 1, Status: "New",
		ActionID: 99, Action: "Other", DispositionID: 17, Disposition: "Logged", IsAlert: true, Message: message,
		FindingInfo: FindingInfo{UID: id + ":" + strconv.FormatInt(at.UnixNano(), 10), Title: title, CreatedTime: ms,
			Analytic: Analytic{UID: id, Name: title, TypeID: 99, Type: "Other"}},
		Metadata:  Metadata{Version: OCSFVersion, LogName: "acs.alerts", Product: Product{Name: ProductName, VendorName: ProductName}},
		Evidences: []Evidence{{Data: details}},
		Unmapped:  map[string]any{"turnguard": map[string]any{"operational": true, "id": id}},
	}
	return Subject(SystemTenant, severity, id), f
}
