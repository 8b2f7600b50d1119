import { drivesV1 } from '@mileage/proto';
import { errors, type FieldViolation } from '@mileage/runtime/grpc';
import { isUserId, timestampToIso, timestampToMillis, type WireTimestamp } from '@mileage/runtime/formats';
import type { ListQuery } from './drives-repo';

const CURRENCIES = new Set(['USD', 'CAD', 'GBP']);
export const MAX_LIMIT = 1000;

function fail(violations: FieldViolation[]): void {
  if (violations.length) throw errors.invalidArgument('invalid request', violations);
}

export function requirePositive(id: number, field: string): void {
  fail(Number.isSafeInteger(id) && id > 0 ? [] : [{ field, description: 'positive integer' }]);
}

export function listQuery(request: {
  limit: number;
  sortField: drivesV1.SortField;
  after?: WireTimestamp | undefined;
  before?: WireTimestamp | undefined;
  afterPosition?: drivesV1.PagePosition | undefined;
  includeDeleted?: boolean;
}): ListQuery {
  const violations: FieldViolation[] = [];
  if (!Number.isInteger(request.limit) || request.limit < 1 || request.limit > MAX_LIMIT)
    violations.push({ field: 'limit', description: `1..${MAX_LIMIT}` });
  const position = request.afterPosition;
  if (position && (!position.sortTime || !(position.id > 0)))
    violations.push({ field: 'after_position', description: 'sort_time and a positive id' });
  const sortField = request.sortField === drivesV1.SortField.SORT_FIELD_ENDED ? 'ended' : 'modified';
  // Tombstones have a modified time only (when the drive was deleted or the report withdrawn).
  if (request.includeDeleted && sortField !== 'modified')
    violations.push({ field: 'include_deleted', description: 'only with the sort by modified time' });
  fail(violations);
  return {
    limit: request.limit,
    sortField,
    ...(request.includeDeleted ? { includeDeleted: true } : {}),
    ...(request.after ? { after: timestampToIso(request.after) } : {}),
    ...(request.before ? { before: timestampToIso(request.before) } : {}),
    ...(position ? { position: { sortTime: timestampToIso(position.sortTime!), id: position.id } } : {}),
  };
}

export function classificationFilter(filter: drivesV1.ClassificationFilter): string | null {
  switch (filter) {
    case drivesV1.ClassificationFilter.CLASSIFICATION_FILTER_PERSONAL:
      return 'personal';
    case drivesV1.ClassificationFilter.CLASSIFICATION_FILTER_ALL:
      return null;
    default:
      return 'business';
  }
}

export function validateDrive(drive: drivesV1.Drive | undefined, options: { idRequired: boolean }): drivesV1.Drive {
  if (!drive) throw errors.invalidArgument('drive is required', [{ field: 'drive', description: 'required' }]);
  const violations: FieldViolation[] = [];
  if (options.idRequired && !(drive.id > 0)) violations.push({ field: 'id', description: 'positive integer' });
  if (!isUserId(drive.userId)) violations.push({ field: 'user_id', description: 'invalid user id' });
  const start = drive.startTime ? timestampToMillis(drive.startTime) : Number.NaN;
  const end = drive.endTime ? timestampToMillis(drive.endTime) : Number.NaN;
  if (Number.isNaN(start)) violations.push({ field: 'start_time', description: 'required' });
  if (Number.isNaN(end)) violations.push({ field: 'end_time', description: 'required' });
  if (end < start) violations.push({ field: 'end_time', description: 'not before start_time' });
  if (drive.distance && (!(drive.distance.amount >= 0) || !['mi', 'km'].includes(drive.distance.units))) {
    violations.push({ field: 'distance', description: 'non-negative amount in "mi" or "km"' });
  }
  for (const [field, money] of [
    ['value', drive.value],
    ['toll_fees', drive.tollFees],
    ['parking_fees', drive.parkingFees],
  ] as const) {
    if (money && (!Number.isSafeInteger(money.amount) || money.amount < 0 || !CURRENCIES.has(money.currency))) {
      violations.push({ field, description: 'non-negative integer minor units in USD, CAD or GBP' });
    }
  }
  if (drive.entry === drivesV1.Entry.ENTRY_UNSPECIFIED)
    violations.push({ field: 'entry', description: 'manual or automatic' });
  if ((drive.description?.length ?? 0) > 4000)
    violations.push({ field: 'description', description: 'at most 4000 characters' });
  if ((drive.purpose?.length ?? 0) > 256) violations.push({ field: 'purpose', description: 'at most 256 characters' });
  fail(violations);
  return drive;
}
