"""Tests of the pure action organ; ``home()`` is the shared synthetic registry."""

from custom_components.alto.act.model import ExposedEntity, Registry

HOME = (
    ExposedEntity(
        "light.kitchen",
        "Kitchen light",
        aliases=("Kitchen lamp", "Ceiling"),
        area="Kitchen",
        attributes={"min_color_temp_kelvin": 2000, "max_color_temp_kelvin": 6500},
    ),
    ExposedEntity("light.hall", "Hall light", area="Hall"),
    ExposedEntity("switch.kettle", "Kettle", area="Kitchen"),
    ExposedEntity("input_boolean.guest_mode", "Guest mode"),
    ExposedEntity("fan.bedroom", "Bedroom fan", area="Bedroom"),
    ExposedEntity("lock.front_door", "Front door", area="Hall"),
    ExposedEntity("cover.blinds", "Living room blinds", area="Living room", device_class="blind"),
    ExposedEntity("cover.garage", "Garage door", area="Garage", device_class="garage"),
    ExposedEntity(
        "climate.living",
        "Thermostat",
        area="Living room",
        attributes={"min_temp": 10, "max_temp": 28, "hvac_modes": ["off", "heat"]},
    ),
    ExposedEntity("climate.office", "Office heater", area="Office"),
    ExposedEntity("media_player.tv", "TV", aliases=("Telly",), area="Living room"),
    ExposedEntity("scene.movie", "Movie time"),
    ExposedEntity("script.bedtime", "Bedtime routine"),
    ExposedEntity("vacuum.robo", "Robot vacuum"),
    ExposedEntity("alarm_control_panel.house", "House alarm"),
    ExposedEntity("valve.garden", "Garden tap", area="Garden"),
    ExposedEntity(
        "humidifier.bedroom",
        "Bedroom humidifier",
        area="Bedroom",
        attributes={"min_humidity": 30, "max_humidity": 60},
    ),
    ExposedEntity("sensor.outside_temperature", "Outside temperature", device_class="temperature"),
)


def home() -> Registry:
    """The synthetic registry of `HOME`."""
    return Registry(HOME)
