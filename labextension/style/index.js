import './base.css';
import './citizen.css';
