import { parseRfc3339 } from '@mileage/runtime';
import type { Request } from 'express';
import type { ValidationIssue } from './problems';

export interface DriveListParams {
  limit: number;
  classification: 'business' | 'personal' | 'all';
  sortField: 'modified' | 'ended';
  after?: string;
  before?: string;
  cursor?: string;
  /** (+) Tombstones of deleted drives and withdrawn reports in the list (the change feed). */
  includeDeleted?: true;
}

// Pydantic's boolean parsing (the reference API is FastAPI): these words, in any case.
const TRUE_WORDS = new Set(['1', 'on', 't', 'true', 'y', 'yes']);
const FALSE_WORDS = new Set(['0', 'off', 'f', 'false', 'n', 'no']);

/**
 * The query parameters of the three drive lists (CONTRACT §2), with every problem reported at once in the
 * 422 shape. `withClassification` is false for the reported-drive lists. As the reference API (FastAPI) does, unknown
 * parameters are ignored and the last of a repeated one wins, so integrations that add cache-busters keep working.
 */
export function parseDriveListParams(
  req: Request,
  withClassification: boolean,
): { input: DriveListParams } | { issues: ValidationIssue[] } {
  const issues: ValidationIssue[] = [];
  const query = req.query as Record<string, unknown>;
  const single = (name: string): string | undefined => {
    const value = query[name];
    const last = Array.isArray(value) ? value[value.length - 1] : value;
    return typeof last === 'string' ? last : undefined;
  };

  let limit = 100;
  const rawLimit = single('limit');
  if (rawLimit !== undefined) {
    if (!/^\d{1,4}$/.test(rawLimit))
      issues.push({ loc: ['query', 'limit'], msg: 'Input should be a valid integer', type: 'int_parsing' });
    else if (Number(rawLimit) < 1)
      issues.push({
        loc: ['query', 'limit'],
        msg: 'Input should be greater than or equal to 1',
        type: 'greater_than_equal',
      });
    else if (Number(rawLimit) > 1000)
      issues.push({
        loc: ['query', 'limit'],
        msg: 'Input should be less than or equal to 1000',
        type: 'less_than_equal',
      });
    else limit = Number(rawLimit);
  }

  let classification: DriveListParams['classification'] = 'business';
  const rawClass = withClassification ? single('classification') : undefined;
  if (rawClass !== undefined) {
    if (rawClass === 'business' || rawClass === 'personal' || rawClass === 'all') classification = rawClass;
    else
      issues.push({
        loc: ['query', 'classification'],
        msg: "Input should be 'business', 'personal' or 'all'",
        type: 'enum',
      });
  }

  const time = (name: string): string | undefined => {
    const value = single(name);
    if (value === undefined) return undefined;
    const checked = parseRfc3339(value);
    if ('problem' in checked) {
      issues.push({
        loc: ['query', name],
        msg: `Input should be an RFC 3339 date-time with a time zone: ${checked.problem}`,
        type: 'datetime_parsing',
      });
      return undefined;
    }
    return checked.iso;
  };
  const filterBy = single('filter_by');
  if (filterBy !== undefined && filterBy !== 'modified' && filterBy !== 'ended') {
    issues.push({ loc: ['query', 'filter_by'], msg: "Input should be 'modified' or 'ended'", type: 'enum' });
  }
  const dateAfter = time('date_after');
  const dateBefore = time('date_before');
  const modifiedAfter = time('modified_after');
  const modifiedBefore = time('modified_before');
  if ((query.date_after !== undefined || query.date_before !== undefined) && filterBy === undefined) {
    issues.push({
      loc: ['query', 'filter_by'],
      msg: 'filter_by is required with date_after or date_before',
      type: 'missing',
    });
  }
  const usesAliases = query.modified_after !== undefined || query.modified_before !== undefined;
  if (
    usesAliases &&
    (query.date_after !== undefined ||
      query.date_before !== undefined ||
      (filterBy !== undefined && filterBy !== 'modified'))
  ) {
    issues.push({
      loc: ['query', 'modified_after'],
      msg: 'modified_after / modified_before cannot be combined with date_after, date_before or filter_by=ended',
      type: 'value_error',
    });
  }
  const after = usesAliases ? modifiedAfter : dateAfter;
  const before = usesAliases ? modifiedBefore : dateBefore;
  if (after && before && after >= before)
    issues.push({
      loc: ['query', 'date_before'],
      msg: 'date_before should be later than date_after',
      type: 'value_error',
    });
  const cursor = single('cursor');

  let includeDeleted = false;
  const rawDeleted = single('include_deleted');
  if (rawDeleted !== undefined) {
    const word = rawDeleted.toLowerCase();
    if (TRUE_WORDS.has(word)) includeDeleted = true;
    else if (!FALSE_WORDS.has(word))
      issues.push({
        loc: ['query', 'include_deleted'],
        msg: 'Input should be a valid boolean, unable to interpret input',
        type: 'bool_parsing',
      });
  }
  // Tombstones carry only the time of the deletion: they have a place in the order by modified time alone.
  if (includeDeleted && filterBy === 'ended')
    issues.push({
      loc: ['query', 'include_deleted'],
      msg: 'include_deleted=true requires filter_by=modified (or the default order)',
      type: 'value_error',
    });

  if (issues.length) return { issues };
  return {
    input: {
      limit,
      classification,
      sortField: filterBy === 'ended' ? 'ended' : 'modified',
      ...(after ? { after } : {}),
      ...(before ? { before } : {}),
      ...(cursor !== undefined ? { cursor } : {}),
      ...(includeDeleted ? { includeDeleted: true as const } : {}),
    },
  };
}
