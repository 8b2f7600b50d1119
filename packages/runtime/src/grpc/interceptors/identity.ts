import { errors } from '../errors';
import type { CallerIdentities } from '../grpc-authz';
import type { Logger } from '../../telemetry/logger';
import type { Metrics } from '../../telemetry/metrics';
import { methodLabels, type Interceptor } from './interceptor';

/**
 * With mutual TLS: the caller is the component its certificate names, and only the method's `callers` may call it
 * (PERMISSION_DENIED, reason CALLER_NOT_ALLOWED, counted and logged, before anything else of the call is read).
 */
export function callerIdentity(deps: { identities: CallerIdentities; logger: Logger; metrics: Metrics }): Interceptor {
  return (next) => (call) => {
    const caller = deps.identities.of(call.peer);
    call.caller = caller;
    if (!(call.rules.callers as readonly string[]).includes(caller.component)) {
      deps.metrics.grpcServerCallsDenied.inc({ ...methodLabels(call.path), caller: caller.component });
      deps.logger.warn(
        { caller: caller.spiffeId ?? null, grpc_method: call.path, request_id: call.requestId },
        'gRPC call refused: its caller may not call this method',
      );
      throw errors.permissionDenied(`the caller may not call ${call.path}`, 'CALLER_NOT_ALLOWED');
    }
    return next(call);
  };
}
