/**
 * Unit and integration tests. DATABASE_URL selects the integration database (default: a fresh SQLite file).
 *
 * music-metadata (audio lengths) and its parsers are ES modules only. Node 20.19+ loads them from the compiled
 * CommonJS (require of ES modules); jest does not, so they are compiled to CommonJS with the rest, and resolved to
 * their Node entry points (their package exports name only `import`). The nested content-type 2 is CommonJS with an
 * ES-module default that swc's interop does not see: mapped to the root content-type 1, whose `parse` it calls.
 * openid-client (operators' OpenID Connect sign-in) and what it is made of, oauth4webapi and jose, are ES modules
 * only too, and compiled the same way (their package exports' `default` entries are the ones jest resolves).
 */
const ESM = [
  'music-metadata',
  'strtok3',
  'token-types',
  'file-type',
  '@tokenizer',
  'uint8array-extras',
  '@borewit',
  'win-guid',
  'media-typer',
  'openid-client',
  'oauth4webapi',
  'jose',
];
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.(t|j)sx?$': ['@swc/jest', {}] },
  transformIgnorePatterns: [`/node_modules/(?!(${ESM.join('|')})/)`],
  moduleNameMapper: {
    '^music-metadata$': '<rootDir>/node_modules/music-metadata/lib/index.js',
    '^file-type$': '<rootDir>/node_modules/music-metadata/node_modules/file-type/index.js',
    '^strtok3$': '<rootDir>/node_modules/strtok3/lib/index.js',
    '^content-type$': '<rootDir>/node_modules/content-type/index.js',
  },
  globalSetup: '<rootDir>/test/helpers/globalSetup.ts',
  globalTeardown: '<rootDir>/test/helpers/globalTeardown.ts',
  testTimeout: 20000,
};
