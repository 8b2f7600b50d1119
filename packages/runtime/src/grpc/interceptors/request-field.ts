/** A request's field at a dotted path of the generated code's names (`audit.actor`); undefined where absent. */
export function requestField(request: unknown, dottedPath: string): unknown {
  let value: unknown = request;
  for (const key of dottedPath.split('.')) value = (value as Record<string, unknown> | undefined)?.[key];
  return value;
}
