/** Unit and integration tests. DATABASE_URL selects the integration database (default: a fresh SQLite file). */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.tsx?$': ['@swc/jest', {}] },
  globalSetup: '<rootDir>/test/helpers/globalSetup.ts',
  testTimeout: 20000,
};
