package demors

// MaxDeliveriesInFlight exposes the delivery bound to the external tests.
const MaxDeliveriesInFlight = maxDeliveriesInFlight

// MaxSubscriptionsPerGrant and MaxFilterStreams expose the subscription bounds.
const (
	MaxSubscriptionsPerGrant = maxSubscriptionsPerGrant
	MaxFilterStreams         = maxFilterStreams
)
