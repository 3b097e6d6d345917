import { render } from 'preact';
import { App } from './app';
import '../../src/styles.css';
import './admin.css';

render(<App />, document.getElementById('app')!);
