export * from './attributes';
export * from './filter-sql';
export * from './audit';
