package demors

// MaxDeliveriesInFlight exposes the delivery bound to the external tests.
const MaxDeliveriesInFlight = maxDeliveriesInFlight
