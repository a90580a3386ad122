package demors

import (
	"context"

	"github.com/pdpp-mcp/pdpp-mcp/gen/rsserver"
)

// api implements the generated strict server interface by delegating each operation to
// the Server; every method returns a *reply, which satisfies all response interfaces.
type api struct{ s *Server }

var _ rsserver.StrictServerInterface = (*api)(nil)

func (a *api) GetSchema(ctx context.Context, req rsserver.GetSchemaRequestObject) (rsserver.GetSchemaResponseObject, error) {
	return a.s.serve(ctx, func(rc *reqCtx) (*reply, error) { return a.s.getSchema(ctx, rc, req.Params) }), nil
}

func (a *api) ListStreams(ctx context.Context, req rsserver.ListStreamsRequestObject) (rsserver.ListStreamsResponseObject, error) {
	return a.s.serve(ctx, func(rc *reqCtx) (*reply, error) { return a.s.listStreams(ctx, rc, req.Params) }), nil
}

func (a *api) GetStreamMetadata(ctx context.Context, req rsserver.GetStreamMetadataRequestObject) (rsserver.GetStreamMetadataResponseObject, error) {
	return a.s.serve(ctx, func(rc *reqCtx) (*reply, error) {
		return a.s.getStreamMetadata(ctx, rc, req.Stream, req.Params)
	}), nil
}

func (a *api) ListRecords(ctx context.Context, req rsserver.ListRecordsRequestObject) (rsserver.ListRecordsResponseObject, error) {
	return a.s.serve(ctx, func(rc *reqCtx) (*reply, error) { return a.s.listRecords(ctx, rc, req.Stream, req.Params) }), nil
}

func (a *api) GetRecord(ctx context.Context, req rsserver.GetRecordRequestObject) (rsserver.GetRecordResponseObject, error) {
	return a.s.serve(ctx, func(rc *reqCtx) (*reply, error) {
		return a.s.getRecord(ctx, rc, req.Stream, req.Id, req.Params)
	}), nil
}

func (a *api) GetFieldWindow(ctx context.Context, req rsserver.GetFieldWindowRequestObject) (rsserver.GetFieldWindowResponseObject, error) {
	return a.s.serve(ctx, func(rc *reqCtx) (*reply, error) {
		return a.s.getFieldWindow(ctx, rc, req.Stream, req.Id, req.Params)
	}), nil
}

func (a *api) AggregateStream(ctx context.Context, req rsserver.AggregateStreamRequestObject) (rsserver.AggregateStreamResponseObject, error) {
	return a.s.serve(ctx, func(rc *reqCtx) (*reply, error) {
		return a.s.aggregateStream(ctx, rc, req.Stream, req.Params)
	}), nil
}

func (a *api) SearchRecordsLexical(ctx context.Context, req rsserver.SearchRecordsLexicalRequestObject) (rsserver.SearchRecordsLexicalResponseObject, error) {
	return a.s.serve(ctx, func(rc *reqCtx) (*reply, error) { return a.s.searchLexical(ctx, rc, req.Params) }), nil
}

func (a *api) SearchRecordsSemantic(ctx context.Context, req rsserver.SearchRecordsSemanticRequestObject) (rsserver.SearchRecordsSemanticResponseObject, error) {
	return a.s.serve(ctx, func(rc *reqCtx) (*reply, error) { return a.s.searchSemantic(ctx, rc, req.Params) }), nil
}

func (a *api) SearchRecordsHybrid(ctx context.Context, req rsserver.SearchRecordsHybridRequestObject) (rsserver.SearchRecordsHybridResponseObject, error) {
	return a.s.serve(ctx, func(rc *reqCtx) (*reply, error) { return a.s.searchHybrid(ctx, rc, req.Params) }), nil
}

func (a *api) GetBlob(ctx context.Context, req rsserver.GetBlobRequestObject) (rsserver.GetBlobResponseObject, error) {
	return a.s.serve(ctx, func(rc *reqCtx) (*reply, error) { return a.s.getBlob(ctx, rc, req.BlobId, req.Params) }), nil
}

func (a *api) ListEventSubscriptions(ctx context.Context, _ rsserver.ListEventSubscriptionsRequestObject) (rsserver.ListEventSubscriptionsResponseObject, error) {
	return a.s.serve(ctx, func(rc *reqCtx) (*reply, error) { return a.s.listSubscriptions(ctx, rc) }), nil
}

func (a *api) CreateEventSubscription(ctx context.Context, req rsserver.CreateEventSubscriptionRequestObject) (rsserver.CreateEventSubscriptionResponseObject, error) {
	return a.s.serve(ctx, func(rc *reqCtx) (*reply, error) { return a.s.createSubscription(ctx, rc, req.Body) }), nil
}

func (a *api) GetEventSubscription(ctx context.Context, req rsserver.GetEventSubscriptionRequestObject) (rsserver.GetEventSubscriptionResponseObject, error) {
	return a.s.serve(ctx, func(rc *reqCtx) (*reply, error) { return a.s.getSubscription(ctx, rc, req.SubscriptionId) }), nil
}

func (a *api) UpdateEventSubscription(ctx context.Context, req rsserver.UpdateEventSubscriptionRequestObject) (rsserver.UpdateEventSubscriptionResponseObject, error) {
	return a.s.serve(ctx, func(rc *reqCtx) (*reply, error) {
		return a.s.updateSubscription(ctx, rc, req.SubscriptionId, req.Body)
	}), nil
}

func (a *api) DeleteEventSubscription(ctx context.Context, req rsserver.DeleteEventSubscriptionRequestObject) (rsserver.DeleteEventSubscriptionResponseObject, error) {
	return a.s.serve(ctx, func(rc *reqCtx) (*reply, error) { return a.s.deleteSubscription(ctx, rc, req.SubscriptionId) }), nil
}

func (a *api) SendTestEvent(ctx context.Context, req rsserver.SendTestEventRequestObject) (rsserver.SendTestEventResponseObject, error) {
	return a.s.serve(ctx, func(rc *reqCtx) (*reply, error) { return a.s.sendTestEvent(ctx, rc, req.SubscriptionId) }), nil
}
