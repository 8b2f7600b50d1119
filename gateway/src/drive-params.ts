import { parseRfc3339 } from '@mileage/runtime/formats';
import type { Request } from 'express';
import type { ValidationIssue } from './problems';
import type { ApiParameter } from './v1';

/** The size of a page of a /v1 list (drives, reported drives, webhook deliveries). */
export const PAGE_LIMIT = { min: 1, max: 1000, default: 100 };

export const pageLimitParameter: ApiParameter = {
  name: 'limit',
  in: 'query',
  schema: { type: 'integer', minimum: PAGE_LIMIT.min, maximum: PAGE_LIMIT.max, default: PAGE_LIMIT.default },
};

/** A list with this parameter is a change feed, which answers 410 when its lower bound is older than the tombstones. */
export const CHANGE_FEED_PARAMETER = 'include_deleted';
const CLASSIFICATIONS = ['business', 'personal', 'all'] as const;
const SORT_FIELDS = ['modified', 'ended'] as const;
const dateTime = { type: 'string', format: 'date-time' };

/** The query parameters parseDriveListParams reads, as the OpenAPI document declares them. */
export function driveListParameters(withClassification: boolean): ApiParameter[] {
  return [
    pageLimitParameter,
    ...(withClassification
      ? [
          {
            name: 'classification',
            in: 'query' as const,
            schema: { type: 'string', enum: [...CLASSIFICATIONS], default: 'business' },
          },
        ]
      : []),
    {
      name: 'filter_by',
      in: 'query',
      description: 'The field that date_after / date_before bound and the list is ordered by.',
      schema: { type: 'string', enum: [...SORT_FIELDS] },
    },
    {
      name: 'date_after',
      in: 'query',
      description: 'Exclusive lower bound (RFC 3339); requires filter_by.',
      schema: dateTime,
    },
    {
      name: 'date_before',
      in: 'query',
      description: 'Exclusive upper bound (RFC 3339); requires filter_by.',
      schema: dateTime,
    },
    {
      name: 'modified_after',
      in: 'query',
      deprecated: true,
      description:
        'Alias of filter_by=modified&date_after=…. Exclusive with date_after, date_before and filter_by=ended (with any of them: 422).',
      schema: dateTime,
    },
    {
      name: 'modified_before',
      in: 'query',
      deprecated: true,
      description:
        'Alias of filter_by=modified&date_before=…. Exclusive with date_after, date_before and filter_by=ended (with any of them: 422).',
      schema: dateTime,
    },
    {
      name: 'cursor',
      in: 'query',
      description: '(+) The next_cursor of the previous page of the same query.',
      schema: { type: 'string' },
    },
    {
      name: CHANGE_FEED_PARAMETER,
      in: 'query',
      description: `(+) The change feed: also list ${withClassification ? 'deleted drives as `{"drive_id", "deleted": true, "modified"}`' : 'withdrawn reports and deleted drives as `{"id", "deleted": true, "modified"}`'} (\`modified\` = when deleted${withClassification ? ', whatever the drive’s classification was' : ''}), in order with the live items and under the same cursor. Only with \`filter_by=modified\` or the default order (else 422). Tombstones are kept 90 days (by default): with a \`date_after\` / \`modified_after\` older than that, 410. Without it (or \`false\`) the response is exactly as without the change feed.`,
      schema: { type: 'boolean', default: false },
    },
  ];
}

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

  let limit = PAGE_LIMIT.default;
  const rawLimit = single('limit');
  if (rawLimit !== undefined) {
    if (!/^\d{1,4}$/.test(rawLimit))
      issues.push({ loc: ['query', 'limit'], msg: 'Input should be a valid integer', type: 'int_parsing' });
    else if (Number(rawLimit) < PAGE_LIMIT.min)
      issues.push({
        loc: ['query', 'limit'],
        msg: 'Input should be greater than or equal to 1',
        type: 'greater_than_equal',
      });
    else if (Number(rawLimit) > PAGE_LIMIT.max)
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
    if ((CLASSIFICATIONS as readonly string[]).includes(rawClass)) classification = rawClass as typeof classification;
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
