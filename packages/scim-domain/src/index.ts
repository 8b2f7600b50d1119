export * from './declaration';
export * from './discovery';
export * from './filter-table';
export * from './filter-sql';
export * from './audit';
export * from './filter-cost';
export * from './representation';
