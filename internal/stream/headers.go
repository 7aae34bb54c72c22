package stream

// hdrPinID is set by the server on deliveries to a consumer's pinned client.
const hdrPinID = "Nats-Pin-Id"
