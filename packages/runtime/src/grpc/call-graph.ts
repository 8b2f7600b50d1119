import { METHOD_RULES, type Component, type MethodRules } from '@mileage/proto';

/**
 * The processes of an installation, which call one another over the hop. `operator` and `seed` call from outside it
 * (`npm run org` with an operator's certificate; the demo data of the stacks on one machine): no NetworkPolicy or
 * stack wiring is theirs.
 */
export const PROCESSES = ['gateway', 'users', 'groups', 'drives', 'scim', 'webhooks'] as const;
export type Process = (typeof PROCESSES)[number];
/** A process that serves gRPC (the gateway serves none). */
export type Server = Exclude<Process, 'gateway'>;

/** The process that serves a method: its package's name (`/mileage.users.v1.OrganizationsService/…` → users). */
export function serverOf(path: string): Server {
  const name = /^\/mileage\.([a-z]+)\.v\d+\./.exec(path)?.[1];
  if (!PROCESSES.includes(name as Process) || name === 'gateway') throw new Error(`no process serves ${path}`);
  return name as Server;
}

/**
 * Whom each process calls, derived from every method's `callers`: the only connections an installation needs (the
 * chart's NetworkPolicies, the development stack's addresses). Sorted, without a process's calls to itself.
 */
export function callGraph(
  rules: Readonly<Record<string, MethodRules<Component>>> = METHOD_RULES,
): Record<Process, Server[]> {
  const graph = Object.fromEntries(PROCESSES.map((p) => [p, new Set<Server>()])) as Record<Process, Set<Server>>;
  for (const [path, { callers }] of Object.entries(rules)) {
    const server = serverOf(path);
    for (const caller of callers)
      if (caller !== server && (PROCESSES as readonly string[]).includes(caller)) graph[caller as Process].add(server);
  }
  return Object.fromEntries(PROCESSES.map((p) => [p, [...graph[p]].sort()])) as Record<Process, Server[]>;
}

/**
 * Whom the operator's commands (`npm run org`, also as the chart's Jobs in the cluster) call, from the methods whose
 * callers name `operator`: the egress of the chart's operator pods and the ingress the services admit from them.
 */
export function operatorCalls(rules: Readonly<Record<string, MethodRules<Component>>> = METHOD_RULES): Server[] {
  const called = new Set<Server>();
  for (const [path, { callers }] of Object.entries(rules))
    if ((callers as readonly string[]).includes('operator')) called.add(serverOf(path));
  return [...called].sort();
}
