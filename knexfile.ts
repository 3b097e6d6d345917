// For the knex CLI: node --import tsx node_modules/knex/bin/cli.js migrate:latest --knexfile knexfile.ts
// The application itself migrates with `switchyard migrate`. DATABASE_URL picks the database.
import { knexConfig } from './src/db';

export default knexConfig();
