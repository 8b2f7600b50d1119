import { errors } from '../errors';
import { receivedEndUser, type EndUserVerifier } from '../end-user';
import type { Logger } from '../../telemetry/logger';
import type { Metrics } from '../../telemetry/metrics';
import { methodLabels, type InboundCall, type Interceptor } from './interceptor';
import { organizationNamed } from './organization';
import { requestField } from './request-field';

/**
 * Why a call's end-user context does not vouch for it (undefined when it does): checked, of the call's organization,
 * and naming the request's user or client where the method's `end_user` binding says.
 */
export function endUserProblem(
  verifier: EndUserVerifier,
  call: Pick<InboundCall, 'rules' | 'request' | 'metadata'>,
): string | undefined {
  const binding = call.rules.endUser;
  if (!binding) return undefined;
  const signed = receivedEndUser(call.metadata);
  const check = verifier.check(signed?.token, signed?.cert);
  if (!check.ok) return check.reason;
  const { user } = check;
  if (organizationNamed(call) !== user.org) return 'the call acts inside another organization than its end user';
  if (binding.userField && requestField(call.request, binding.userField) !== user.sub)
    return `${binding.userField} is not the end user's`;
  if (
    binding.clientField &&
    (user.client === undefined || requestField(call.request, binding.clientField) !== user.client)
  )
    return `${binding.clientField} is not the end user's client`;
  return undefined;
}

/**
 * A call from one of its method's `end_user.from` callers acts for the end user the gateway vouched for: without that
 * context, or with one that names another user, client or organization, it is refused (PERMISSION_DENIED, reason
 * END_USER_NOT_VOUCHED) — a pod that may call a method still cannot pick whom it acts for. Runs after callerIdentity.
 */
export function endUserBinding(deps: { verifier: EndUserVerifier; logger: Logger; metrics: Metrics }): Interceptor {
  return (next) => (call) => {
    const from = call.rules.endUser?.from as readonly string[] | undefined;
    if (!call.caller || !from?.includes(call.caller.component)) return next(call);
    const problem = endUserProblem(deps.verifier, call);
    if (problem) {
      deps.metrics.grpcServerCallsDenied.inc({ ...methodLabels(call.path), caller: call.caller.component });
      deps.logger.warn(
        { caller: call.caller.spiffeId ?? null, grpc_method: call.path, request_id: call.requestId, reason: problem },
        "gRPC call refused: no end-user context of the gateway's vouches for it",
      );
      throw errors.permissionDenied(`the call is not vouched for by the gateway: ${problem}`, 'END_USER_NOT_VOUCHED');
    }
    return next(call);
  };
}
