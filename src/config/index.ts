/** The configuration: its types, its schema, and how it is read. */
export * from './types';
export {
  checkConfig,
  DEFAULT_FILE_TOKENS,
  DEFAULT_IMAGE_TOKENS,
  loadConfig,
  MIN_RETENTION_DAYS,
  parseConfig,
  readYaml,
} from './load';
