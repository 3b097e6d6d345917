/**
 * Which database errors mean "the database cannot be reached" (a 503 the client may retry), not a wrong query (a
 * 500). Found by the cluster test: a transaction whose connection the server dropped failed its ROLLBACK with
 * mysql2's codeless fatal error, and the request got a 500.
 */
import { isDatabaseDown } from '../../src/db';

test("mysql2's error for a command on a connection the server dropped is the database being down", () => {
  // as mysql2 makes it (base/connection.js _addCommandClosedState), with knex's prefix of the statement
  const closed = Object.assign(new Error("ROLLBACK - Can't add new command when connection is in closed state"), {
    fatal: true,
  });
  expect(isDatabaseDown(closed)).toBe(true);
  expect(isDatabaseDown(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', fatal: true }))).toBe(true);
});

test('a server error, fatal or not, is not the database being down', () => {
  const denied = Object.assign(new Error("Access denied for user 'x'"), {
    code: 'ER_ACCESS_DENIED_ERROR',
    errno: 1045,
    fatal: true,
  });
  const duplicate = Object.assign(new Error('Duplicate entry'), { code: 'ER_DUP_ENTRY', errno: 1062 });
  expect(isDatabaseDown(denied)).toBe(false);
  expect(isDatabaseDown(duplicate)).toBe(false);
  expect(isDatabaseDown(new Error('something else'))).toBe(false);
});
