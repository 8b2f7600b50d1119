import type { RouteSpec } from '../v1';
import { listAllReportedDrives, listGroupReportedDrives, listUserDrives } from './drives';
import { getGroup, listGroups } from './groups';
import { downloadExport, getExport, listExports, requestExport } from './exports';
import { createScimToken, listProvisioningEvents, listScimTokens, revokeScimToken } from './organization';
import { exportMe, getMe, getUser } from './users';
import { createWebhook, deleteWebhook, listDeliveries, listWebhooks, redeliver } from './webhooks';

/**
 * Every /v1 route, in the order the app mounts them (/v1/users/me before /v1/users/{user_id}) and the OpenAPI
 * document lists them. The document and the 405 answers are derived from this table.
 */
export const V1_ROUTES: readonly RouteSpec<unknown>[] = [
  getMe,
  exportMe,
  getUser,
  listUserDrives,
  listGroups,
  getGroup,
  listGroupReportedDrives,
  listAllReportedDrives,
  listWebhooks,
  createWebhook,
  deleteWebhook,
  listDeliveries,
  redeliver,
  listScimTokens,
  createScimToken,
  revokeScimToken,
  listProvisioningEvents,
  requestExport,
  listExports,
  getExport,
  downloadExport,
];
