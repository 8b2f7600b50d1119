/** For this package's tests: a Users service answering every call with an empty success, `overrides` aside. */
import type { usersV1 } from '@mileage/proto';
import type { Handlers } from './grpc-server';

export function usersServiceStub(
  overrides: Partial<Handlers<usersV1.UsersServiceServer>> = {},
): Handlers<usersV1.UsersServiceServer> {
  return {
    getUser: async () => ({}),
    batchGetUsers: async () => ({ users: [] }),
    createUser: async () => ({}),
    updateUser: async () => ({}),
    deleteUser: async () => ({}),
    listUsers: async () => ({ users: [], totalSize: 0 }),
    batchFindUsersByUserName: async () => ({ matches: [] }),
    listProvisioningEvents: async () => ({ events: [], hasMore: false }),
    ...overrides,
  };
}

/** A whole user as a stub answers it (every field the wire needs), named `id`. */
export function stubUser(id: string, userName = 'x'): usersV1.User {
  return {
    id,
    userName,
    emails: [],
    active: true,
    timezone: 'UTC',
    version: 1,
    organizationId: 1,
    organizationAdmin: false,
  };
}
