"""The ASGI application: the embedded services start (or are found) first, as for the WSGI one."""

import os

from django.core.asgi import get_asgi_application

from config.configuration import first_start
from config.embedded import services_start

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
first_start()  # DATA_DIR and the kept secret key, before the settings are read
services_start()
application = get_asgi_application()
