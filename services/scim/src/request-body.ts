import { ScimError, scimErrors } from './errors';

/** Deeper than any SCIM body nests (a PATCH value's sub-attributes are at depth 5); JSON.parse itself has no bound. */
const MAX_BODY_DEPTH = 32;

/**
 * Why a parsed JSON body cannot be taken, or undefined: nested past MAX_BODY_DEPTH (walking it further would exhaust
 * the stack), or holding a string or key that is not well-formed Unicode (a lone surrogate, which no UTF-8 text can
 * store).
 */
function bodyProblem(value: unknown, depth = 0): string | undefined {
  // In a /u pattern \p{Cs} matches only unpaired surrogates (a pair is one code point).
  if (typeof value === 'string')
    return /\p{Cs}/u.test(value) ? 'The request body holds a string that is not valid Unicode' : undefined;
  if (!value || typeof value !== 'object') return undefined;
  if (depth >= MAX_BODY_DEPTH) return `The request body nests deeper than ${MAX_BODY_DEPTH} levels`;
  for (const [key, item] of Object.entries(value)) {
    const problem = (Array.isArray(value) ? undefined : bodyProblem(key)) ?? bodyProblem(item, depth + 1);
    if (problem) return problem;
  }
  return undefined;
}

/**
 * Parses a JSON body sent as application/scim+json or application/json; anything else is refused (415). The content
 * type is checked here, once, because only this service knows which requests read a body; the size is the gateway's
 * check (BODY_LIMIT_BYTES, 413), made before it reads the bytes.
 */
export function readJson(body: Buffer, contentType: string | undefined): unknown {
  if (contentType && !/^application\/(scim\+)?json\s*(;|$)/i.test(contentType)) {
    throw new ScimError(415, 'Send the body as application/scim+json (or application/json)');
  }
  if (body.length === 0) throw scimErrors.invalidSyntax('The request has no body');
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    throw scimErrors.invalidSyntax('The request body is not valid JSON');
  }
  const problem = bodyProblem(parsed);
  if (problem) throw scimErrors.invalidSyntax(problem);
  return parsed;
}
