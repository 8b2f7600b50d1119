import type { NextFunction, Request, RequestHandler, Response } from 'express';

/** A route of the table: its method, its path template (`/v1/users/{user_id}`) and the handlers that serve it. */
export interface TableRoute {
  method: 'get' | 'post' | 'delete';
  path: string;
  handlers: RequestHandler[];
}

/** The table's layer, and what it knows of the paths it serves. */
export interface RouteTable extends RequestHandler {
  /** The methods the table's routes take at `path`, in their order (a 405's Allow), or undefined when none does. */
  allowedAt(path: string): string | undefined;
}

interface CompiledRoute {
  /** The request methods it serves: its own, and HEAD beside GET. */
  methods: readonly string[];
  pattern: RegExp;
  names: string[];
  handlers: RequestHandler[];
}

/**
 * Routes under one prefix as a single Express layer. Mounted one by one, each route is a layer and a route stack of
 * Express's router, and a request walks every one mounted before its own: on the gateway's hot path that walk cost
 * more than the lookup itself. Matching is Express's default: case-insensitive, an optional trailing slash, path
 * parameters percent-decoded (a malformed one is a 400, whatever the method), the first route in the table wins, GET
 * also serves HEAD. A request no route takes with its method (OPTIONS included) falls through to the next layer, where
 * the app answers 405 with Allow or 404, as it did when Express's router let it through.
 */
export function routeTable(prefix: string, routes: readonly TableRoute[]): RouteTable {
  const compiled = routes.map(compile);
  const lowerPrefix = prefix.toLowerCase();
  const dispatch: RequestHandler = (req, res, next) => {
    const path = req.path;
    if (path.slice(0, lowerPrefix.length).toLowerCase() !== lowerPrefix) return next();
    // As Express: the path first (a malformed parameter is a 400 whatever the method), then the method.
    for (const route of compiled) {
      const match = route.pattern.exec(path);
      if (!match) continue;
      const params: Record<string, string> = {};
      for (let i = 0; i < route.names.length; i++) {
        const value = match[i + 1]!;
        try {
          params[route.names[i]!] = value.includes('%') ? decodeURIComponent(value) : value;
        } catch {
          return next(Object.assign(new URIError(`Failed to decode param '${value}'`), { status: 400 }));
        }
      }
      if (!route.methods.includes(req.method)) continue;
      req.params = params;
      return run(route.handlers, 0, req, res, next);
    }
    next();
  };
  const allowedAt = (path: string) => {
    const methods = new Set(compiled.filter((r) => r.pattern.test(path)).flatMap((r) => r.methods));
    return methods.size ? [...methods].join(', ') : undefined;
  };
  return Object.assign(dispatch, { allowedAt });
}

function compile({ method, path, handlers }: TableRoute): CompiledRoute {
  const names: string[] = [];
  const source = path
    .split(/\{([a-z_]+)\}/)
    .map((part, i) => {
      if (i % 2 === 0) return part.replace(/[.*+?^$()|[\]\\]/g, '\\$&');
      names.push(part);
      return '([^/]+?)';
    })
    .join('');
  const own = method.toUpperCase();
  return {
    methods: own === 'GET' ? ['GET', 'HEAD'] : [own],
    pattern: new RegExp(`^${source}/?$`, 'i'),
    names,
    handlers,
  };
}

/** Runs the handlers in turn as Express does: `next()` passes on, `next(err)` and a rejected promise go to errors. */
function run(handlers: RequestHandler[], index: number, req: Request, res: Response, next: NextFunction): void {
  const proceed: NextFunction = (err?: unknown) => {
    if (err) next(err);
    else if (index + 1 < handlers.length) run(handlers, index + 1, req, res, next);
    else next();
  };
  try {
    const returned: unknown = handlers[index]!(req, res, proceed);
    if (returned instanceof Promise) returned.catch((err: unknown) => next(err ?? new Error('Rejected promise')));
  } catch (err) {
    next(err);
  }
}
