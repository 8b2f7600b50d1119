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
    listProvisioningEvents: async () => ({ events: [], hasMore: false }),
    ...overrides,
  };
}
