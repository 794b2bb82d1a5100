package profile

// Recovery from lost packets (faults in the fabric): how an RC queue
// retransmits and when it gives up, how long SRD waits before it sends a
// packet again and before it gives up on a peer, and what a host proxy
// does with a queue in error.
var faultDefs = []Def{
	{"nic.ack_timeout", "count", 0, 31, "an RC QP's local ACK timeout field: the requester waits 4.096 µs × 2^value for an acknowledgement before it retransmits (0: no timeout)"},
	{"nic.retry_cnt", "count", 0, 7, "an RC QP's retry count (3 bits): retransmissions of one packet before the QP goes into error (IBV_WC_RETRY_EXC_ERR)"},
	{"efa.unresponsive_ms", "ms", 0.001, 1e6, "how long SRD retransmits to a peer that acknowledges nothing before the send completes in error"},
	{"proxy.qp_resets", "count", 0, 1000, "times a host proxy resets an RC QP in error and posts its work again before it reports the error"},
	{"proxy.qp_reset_us", "µs", 0, 1e7, "a proxy's reset of a QP in error: back to RTS with the peer's new sequence numbers exchanged out of band"},
}
