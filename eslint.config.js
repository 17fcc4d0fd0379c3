// ESLint (flat config): typescript-eslint's recommended rules over src/, test/ and scripts/.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'data/', 'test/fixtures/', 'dist/', 'test/client/generated/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      // Mail and terminal output are full of control characters matched on purpose (escaping, CRLF, NUL checks).
      'no-control-regex': 'off',
    },
  },
  {
    // Plain JavaScript run by node itself (bin/mta.js, scripts/build.mjs, the workers' boot files).
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
  },
  {
    // Tests read JSON bodies and library internals loosely; `any` there is a convenience, not a design.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
