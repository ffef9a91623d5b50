// Lint rules for Roster: the recommended sets of ESLint and typescript-eslint, nothing exotic.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      eqeqeq: ['error', 'always'],
      'no-console': 'off',
    },
  },
  // The browser console (web/src, compiled by web/tsconfig.json) runs in the browser; its build
  // script (web/build.mjs) runs in Node.
  { files: ['web/**'], languageOptions: { globals: globals.browser } },
  { files: ['web/build.mjs', 'scripts/**'], languageOptions: { globals: globals.node } },
);
