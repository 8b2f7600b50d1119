export * from './attributes';
export * from './filter-sql';
